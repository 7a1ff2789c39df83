"""How OAuth client secrets are stored: salted SHA-256, not the password hasher's 870,000 rounds of PBKDF2.

A slow hash protects what people choose; a client secret is 128 random characters the server generated
(about 760 bits), which no number of guesses reaches, so a slow hash only made each registration and each
client authentication at /oauth/token/ cost about half a second of CPU, work any caller could ask for
in a loop (docs/BENCHMARKS.md). Secrets stored with the old hasher still verify (the stored value names
its hasher); tokens are already stored as SHA-256 checksums for the same reason.
"""

from __future__ import annotations

import hashlib

from django.contrib.auth.hashers import BasePasswordHasher, mask_hash
from django.utils.crypto import constant_time_compare


class ClientSecretHasher(BasePasswordHasher):
    """Listed last in PASSWORD_HASHERS, so it verifies client secrets and never hashes a user's password."""

    algorithm = "docsmcp_secret_sha256"

    def encode(self, password: str, salt: str) -> str:
        self._check_encode_args(password, salt)
        digest = hashlib.sha256(f"{salt}${password}".encode()).hexdigest()
        return f"{self.algorithm}${salt}${digest}"

    def decode(self, encoded: str) -> dict:
        algorithm, salt, digest = encoded.split("$", 2)
        assert algorithm == self.algorithm
        return {"algorithm": algorithm, "hash": digest, "salt": salt}

    def verify(self, password: str, encoded: str) -> bool:
        decoded = self.decode(encoded)
        return constant_time_compare(encoded, self.encode(password, decoded["salt"]))

    def safe_summary(self, encoded: str) -> dict:
        decoded = self.decode(encoded)
        return {"algorithm": decoded["algorithm"], "salt": mask_hash(decoded["salt"], show=2),
                "hash": mask_hash(decoded["hash"])}

    def harden_runtime(self, password: str, encoded: str) -> None:
        pass
