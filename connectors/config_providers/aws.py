"""`${secretManager:secret-id:key}`: a key of a JSON secret in AWS Secrets Manager (MSK Connect's way).

The class names are those MSK Connect workers declare (`config.providers.secretManager.class=
com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider`) and AWS's own MSK config
providers; the params are jcustenborder's (`aws.region`, `aws.access.key`, `aws.secret.key`,
`secret.prefix`, `aws.endpoint.url`). Without keys, boto3's default credential chain is used.
"""

from __future__ import annotations

import json
import posixpath
import threading
from typing import Any

from ingest.config.providers import ConfigProvider
from ingest.errors import ConfigError, Problem


class SecretsManagerConfigProvider(ConfigProvider):
    aliases = ("com.github.jcustenborder.kafka.config.aws.SecretsManagerConfigProvider",
               "com.amazonaws.kafka.config.providers.SecretsManagerConfigProvider")

    def __init__(self, params):
        super().__init__(params)
        self._client: Any = None
        self._secrets: dict[str, dict[str, Any]] = {}  # one GetSecretValue per secret and resolution
        self._lock = threading.Lock()

    def _secrets_manager(self):
        if self._client is None:
            import boto3

            p = self.params
            kwargs = {"region_name": p.get("aws.region") or None, "endpoint_url": p.get("aws.endpoint.url") or None}
            if p.get("aws.access.key"):
                kwargs.update(aws_access_key_id=p["aws.access.key"], aws_secret_access_key=p.get("aws.secret.key"))
            self._client = boto3.client("secretsmanager", **kwargs)
        return self._client

    def get(self, path: str, keys: set[str]) -> dict[str, str]:
        prefix = self.params.get("secret.prefix", "")
        secret_id = posixpath.join(prefix, path) if prefix else path
        with self._lock:
            if secret_id not in self._secrets:
                self._secrets[secret_id] = self._fetch(secret_id)
        values = self._secrets[secret_id]
        # A JSON string is the value; another scalar is its JSON text (Kafka's provider would give null).
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()
                if k in keys and v is not None and not isinstance(v, (dict, list))}

    def _fetch(self, secret_id: str) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            result = self._secrets_manager().get_secret_value(SecretId=secret_id)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            what = {"ResourceNotFoundException": "Could not find secret",
                    "DecryptionFailure": "Could not decrypt secret",
                    "AccessDeniedException": "Access denied to secret"}.get(code, f"{code or 'Error'} reading secret")
            raise ConfigError([Problem(None, f"{what} '{secret_id}'")]) from None
        except BotoCoreError as e:
            raise ConfigError([Problem(None, f"cannot reach Secrets Manager for '{secret_id}': {e}")]) from None
        text = result.get("SecretString")
        if text is None and result.get("SecretBinary") is not None:
            text = result["SecretBinary"].decode("utf-8", errors="replace")
        try:
            values = json.loads(text or "")
        except json.JSONDecodeError:
            values = None
        if not isinstance(values, dict):  # never echo the secret's text: it may be the secret itself
            raise ConfigError([Problem(None, f"secret '{secret_id}' is not a JSON object of keys; store it as "
                                             '{"username": "...", "password": "..."}')])
        return values
