"""The words of the loader's errors: what went wrong reading a file, in
terms of the file rather than of the parser that failed."""

import json
import struct

# trimesh's exception messages can quote a whole buffer; keep ours readable.
_MAX_REASON_CHARS = 300


def label_of(file_type: str) -> str:
    return file_type.upper()


def reason(exc: BaseException, label: str) -> str:
    """What went wrong, in words for the client: never the exception's type
    name, and parser internals replaced by what they mean for the file."""
    if isinstance(exc, ImportError) and exc.name == "charset_normalizer":
        # trimesh guesses the encoding of non-UTF-8 text with that optional module.
        return "it is not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"its JSON is not valid at character {exc.pos + 1} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"byte {exc.start} is not UTF-8 text"
    if isinstance(exc, (IndexError, KeyError)):
        # numpy's and dict's wording ("index 8 is out of bounds for axis 0")
        # speaks of trimesh's arrays, not of the file.
        return f"it refers to data that is not in the file (damaged, or not {_a(label)} file)"
    if isinstance(exc, (TypeError, AttributeError, NameError)):
        # trimesh met a structure it did not expect (a missing entry, a wrong type).
        return f"its content is not laid out as the {label} format says (damaged, or not {_a(label)} file)"
    if isinstance(exc, struct.error) or "buffer is smaller than requested" in str(exc):
        return f"it ends before the data it announces (truncated, or not {_a(label)} file)"
    message = " ".join(str(exc).split())
    if any(words in message for words in ("could not be read to its end", "could not convert string to",
                                          "invalid literal for")):
        return "it holds text where numbers should be"
    if any(words in message for words in ("cannot reshape array", "inhomogeneous shape", "values to unpack",
                                          "invalid shape in fixed-type tuple", "is not in list")):
        # numpy's and Python's words for rows or headers of the wrong length.
        return f"its rows or header do not hold the values the {label} format needs (damaged or truncated)"
    if not message:
        return f"the file is damaged or not {_a(label)} file"
    if len(message) > _MAX_REASON_CHARS:
        message = message[:_MAX_REASON_CHARS] + "..."
    return message


def _a(label: str) -> str:
    """``label`` with its indefinite article, as read aloud: "an OBJ", "a PLY"."""
    return f"an {label}" if label[:1] in "AEFHILMNORSX" else f"a {label}"


def quantity(n: int, noun: str) -> str:
    if n == 1:
        return f"1 {noun}"
    if noun == "vertex":
        return f"{n} vertices"
    return f"{n} {noun}es" if noun.endswith("sh") else f"{n} {noun}s"
