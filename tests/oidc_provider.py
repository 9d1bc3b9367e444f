"""A real OpenID Connect provider for the access tests: ``oidc-provider-mock`` (Authlib's authorization
server in Flask) on a loopback port, in a thread of the test process, so a test can also sign tokens
with the provider's own key (an expired one, one not valid yet, one for another audience)."""
from __future__ import annotations

import threading
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Provider:
    issuer: str
    app: Any
    paths: list[str]   # the path of every request it answered, in order

    def private_pem(self) -> bytes:
        """The provider's signing key (PEM): tokens signed with it are the provider's."""
        import flask

        with self.app.test_request_context("/"):
            self.app.preprocess_request()
            return flask.g.oidc_provider_mock_storage.jwk.as_pem(is_private=True)

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        """A JWT with ``claims`` (``iss`` the provider's unless given), signed RS256 with the provider's key."""
        import jwt

        return jwt.encode({"iss": self.issuer, **claims}, self.private_pem(), algorithm="RS256", headers=header or None)

    def id_token(self, sub: str, client_id: str, redirect_uri: str = "http://127.0.0.1/cb") -> str:
        """An ID token the provider issues through its own authorization code flow for ``sub``."""
        query = urllib.parse.urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                                        "scope": "openid profile email", "state": "s", "nonce": "n"})

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any) -> None:
                return None
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(urllib.request.Request(f"{self.issuer}/oauth2/authorize?{query}",
                                               data=urllib.parse.urlencode({"sub": sub}).encode()))
            raise AssertionError("the provider did not redirect with a code")
        except urllib.error.HTTPError as exc:
            location = exc.headers["Location"]
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)["code"][0]
        form = urllib.parse.urlencode({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                                       "client_id": client_id, "client_secret": "any"}).encode()
        with urllib.request.urlopen(urllib.request.Request(f"{self.issuer}/oauth2/token", data=form)) as r:
            return json.loads(r.read())["id_token"]


@contextmanager
def provider(users: dict[str, dict[str, Any]], token_max_age: float = 3600, host: str = "localhost") -> Iterator[Provider]:
    """The provider on ``host`` (``localhost``: another site than a server on 127.0.0.1, as an identity
    provider is) with ``users`` (subject -> claims, e.g. ``groups``) known."""
    from datetime import timedelta

    import oidc_provider_mock
    import werkzeug.serving

    app = oidc_provider_mock.app(user_claims=[oidc_provider_mock.User(sub=s, claims=c) for s, c in users.items()],
                                 access_token_max_age=timedelta(seconds=token_max_age))
    paths: list[str] = []
    inner = app.wsgi_app

    def counted(environ: dict, start_response: Any) -> Any:
        paths.append(environ.get("PATH_INFO", ""))
        return inner(environ, start_response)
    app.wsgi_app = counted
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield Provider(f"http://{host}:{server.server_port}", app, paths)
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()
