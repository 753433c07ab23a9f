"""Access: bearer tokens (the API key, signed JWTs), their scopes and scenes.

- :mod:`.scopes`: which scope each request needs, and which scene it touches (the one table);
- :mod:`.tokens`: turning a token into a :class:`~.tokens.Grant` (PyJWT), and minting one;
- :mod:`.jwks`: an identity provider's public keys, from a file or URL;
- :mod:`.middleware`: the check of every request, before routing.
"""

from .middleware import GRANT, TokenAuth
from .scopes import LIVE_MESSAGE_SCOPES, Scope, required_scope, scene_of
from .tokens import Grant, TokenRefused, TokenVerifier, mint_token

__all__ = ["GRANT", "Grant", "LIVE_MESSAGE_SCOPES", "Scope", "TokenAuth", "TokenRefused", "TokenVerifier",
           "mint_token", "required_scope", "scene_of"]
