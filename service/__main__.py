"""``python -m service``: a placeholder until the HTTP service exists."""

import sys


def main() -> int:
    print("The picking service is not built yet: this checkout has the bvh engine only.\n"
          "Use it from Python (see README.md, 'The Python API'); `make test` runs its tests.",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
