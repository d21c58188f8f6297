"""Regenerates ``secrets_corpus.jsonl``: realistic (fake) secrets embedded in chat turns.

    python -m tests.data.make_secrets_corpus

Every line: ``kind``, ``secret`` (the exact string that must never reach Redis or a log)
and ``content`` (a turn that contains it). Seeded, so the file is stable.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).with_name("secrets_corpus.jsonl")
ALNUM = string.ascii_letters + string.digits
rng = random.Random(20261121)


def rand(chars: str, n: int) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


def b64url(n: int) -> str:
    return rand(ALNUM + "-_", n)


def jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = (
        base64.urlsafe_b64encode(
            json.dumps({"sub": rand(string.digits, 8), "exp": 1893456000}).encode()
        )
        .decode()
        .rstrip("=")
    )
    return f"{head}.{body}.{b64url(43)}"


def private_key() -> str:
    lines = "\n".join(rand(ALNUM + "+/", 64) for _ in range(6))
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}\n-----END {kind}PRIVATE KEY-----"


def aws_secret() -> str:
    while True:
        s = rand(ALNUM + "/+", 40)
        if (
            any(c.isupper() for c in s)
            and any(c.islower() for c in s)
            and any(c.isdigit() for c in s)
        ):
            return s


def password() -> str:
    return rand(ALNUM + "!#%^*", rng.randint(10, 20))


# kind -> (secret factory, templates with {s})
KINDS: dict[str, tuple[Callable[[], str], list[str]]] = {
    "openai_key": (
        lambda: rng.choice(["sk-", "sk-proj-", "sk-svcacct-"]) + b64url(rng.choice([48, 64, 120])),
        [
            "My OPENAI_API_KEY is {s} and the client still says 401, why?",
            'client = OpenAI(api_key="{s}")\nresp = client.chat.completions.create(...)',
            "I rotated the key, the new one is {s}. Can you update the notebook?",
        ],
    ),
    "anthropic_key": (
        lambda: "sk-ant-api03-" + b64url(93) + "AA",
        [
            "anthropic.Anthropic(api_key='{s}') raises AuthenticationError",
            "Set ANTHROPIC_API_KEY={s} in the CI secrets, right?",
        ],
    ),
    "aws_access_key_id": (
        lambda: "AKIA" + rand(string.ascii_uppercase + string.digits, 16),
        [
            "aws configure shows access key {s} but s3 ls is denied",
            "[default]\naws_access_key_id = {s}\nregion = eu-west-1",
        ],
    ),
    "aws_secret_key": (
        aws_secret,
        [
            "aws_secret_access_key = {s}",
            "The AWS secret for the deploy user is {s}, keep it out of the repo",
            'export AWS_SECRET_ACCESS_KEY="{s}"',
        ],
    ),
    "github_token": (
        lambda: rng.choice(["ghp_", "gho_", "ghs_"]) + rand(ALNUM, 36),
        [
            "git clone https://{s}@github.com/acme/infra.git fails with 403",
            "curl -H 'Authorization: token {s}' https://api.github.com/user",
            "The action uses GH_TOKEN={s}; should it be a fine-grained PAT?",
        ],
    ),
    "github_pat": (
        lambda: "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
        ["Here is my fine-grained token {s} with repo:read scope"],
    ),
    "gitlab_token": (
        lambda: "glpat-" + b64url(20),
        [
            "gitlab-runner register --registration-token {s}",
            "CI fails: remote: HTTP Basic: Access denied for glpat {s}",
        ],
    ),
    "slack_token": (
        lambda: (
            rng.choice(["xoxb-", "xoxp-"])
            + "-".join(rand(string.digits, 12) for _ in range(2))
            + "-"
            + rand(ALNUM, 24)
        ),
        [
            "SLACK_BOT_TOKEN is {s}, the bot can't post in #deploys",
            'slack_sdk.WebClient(token="{s}")',
        ],
    ),
    "slack_webhook": (
        lambda: (
            "https://hooks.slack.com/services/T"
            + rand(string.ascii_uppercase + string.digits, 8)
            + "/B"
            + rand(string.ascii_uppercase + string.digits, 8)
            + "/"
            + rand(ALNUM, 24)
        ),
        ["Alerts go to {s} via the notifier"],
    ),
    "stripe_key": (
        lambda: rng.choice(["sk_live_", "sk_test_", "rk_live_"]) + rand(ALNUM, 24),
        ['stripe.api_key = "{s}"', "Webhook verification fails using key {s} in prod"],
    ),
    "stripe_webhook_secret": (lambda: "whsec_" + rand(ALNUM, 32), ["STRIPE_WEBHOOK_SECRET={s}"]),
    "google_api_key": (
        lambda: "AIza" + b64url(35),
        ["The Maps embed uses key={s}&callback=initMap", 'firebase config apiKey: "{s}"'],
    ),
    "huggingface_token": (
        lambda: "hf_" + rand(string.ascii_letters, 34),
        ["huggingface-cli login --token {s}"],
    ),
    "npm_token": (lambda: "npm_" + rand(ALNUM, 36), ["//registry.npmjs.org/:_authToken={s}"]),
    "sendgrid_key": (lambda: "SG." + b64url(22) + "." + b64url(43), ["SENDGRID_API_KEY={s}"]),
    "jwt": (
        jwt,
        [
            "The API returns 401 for this token: {s}",
            "localStorage.setItem('session', '{s}')",
        ],
    ),
    "bearer": (
        lambda: b64url(rng.randint(24, 48)) + rand(string.digits, 2),
        [
            'curl -H "Authorization: Bearer {s}" https://api.internal/v1/users',
            "headers = {{'Authorization': 'Bearer {s}'}}",
        ],
    ),
    "basic_auth": (
        lambda: base64.b64encode(f"admin:{password()}".encode()).decode(),
        ["Authorization: Basic {s}"],
    ),
    "private_key": (
        private_key,
        ["Is this key format right for paramiko?\n{s}\nIt says invalid key.", "deploy key:\n{s}"],
    ),
    "password_assignment": (
        password,
        [
            "DB_PASSWORD={s}",
            "psql fails even though password={s} is in my config",
            '{{"username": "admin", "password": "{s}"}}',
            "settings.py has DATABASES password: '{s}' for local dev",
            "export REDIS_PASSWORD='{s}'",
            "the admin passphrase = {s}",
        ],
    ),
    "url_credentials": (
        password,
        [
            "DATABASE_URL is postgres://app:{s}@db.internal:5432/app",
            "redis://default:{s}@cache.example.com:6379/0 times out",
            "pip install --index-url https://deploy:{s}@pypi.acme.dev/simple pkg",
            "mongodb+srv://svc:{s}@cluster0.mongodb.net/test?retryWrites=true",
        ],
    ),
    "env_secret": (
        lambda: b64url(rng.randint(20, 40)),
        [
            ".env:\nDEBUG=1\nJWT_SECRET={s}\nPORT=8080",
            "CLIENT_SECRET={s}",
            "export SESSION_SECRET_KEY={s}",
            "api_key: {s}",
            "SENTRY_DSN=https://{s}@o1.ingest.sentry.io/1",
        ],
    ),
}


def main() -> None:
    rows = []
    per_kind = 6
    for kind, (factory, templates) in KINDS.items():
        for i in range(per_kind):
            secret = factory()
            content = templates[i % len(templates)].format(s=secret)
            rows.append({"kind": kind, "secret": secret, "content": content})
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} secrets to {OUT}")


if __name__ == "__main__":
    main()
