//! `/token`: the authorization-code and refresh-token grants, their single use, rotation
//! and family revocation, and the access tokens they issue.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::error::OAuthError;
use super::form::Params;
use super::{AuthorizationServer, GrantKind, derive, digest, is_form, pkce};
use crate::env::Env;
use crate::request::Request;

impl AuthorizationServer {
    pub(super) fn token(&self, req: &Request<'_>, env: &Env) -> Result<Value, OAuthError> {
        if !is_form(req) {
            return Err(OAuthError::InvalidRequest(
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        let body = std::str::from_utf8(req.body)
            .map_err(|_| OAuthError::InvalidRequest("the body is not UTF-8"))?;
        let p = Params::parse(body)?;
        let client_id = p.get("client_id").ok_or(OAuthError::InvalidClient(
            "client_id is required (public client)",
        ))?;
        let client = self
            .client(client_id)?
            .ok_or(OAuthError::InvalidClient("unknown client"))?;
        // A client registered for some grant types only may use no other (absent: both).
        if let (Some(g), Some(registered)) = (p.get("grant_type"), client["grant_types"].as_array())
        {
            let known = matches!(g, "authorization_code" | "refresh_token");
            if known && !registered.iter().any(|r| r.as_str() == Some(g)) {
                return Err(OAuthError::UnauthorizedClient(
                    "the client did not register for this grant type",
                ));
            }
        }
        match p.get("grant_type") {
            Some("authorization_code") => self.redeem(&p, client_id, env),
            Some("refresh_token") => self.refresh(&p, client_id, env),
            Some(_) => Err(OAuthError::UnsupportedGrantType(
                "grant_type must be authorization_code or refresh_token",
            )),
            None => Err(OAuthError::InvalidRequest("grant_type is missing")),
        }
    }

    /// Marks a stored grant used; the document as it was (`None`: unknown).
    pub(super) fn take(&self, kind: GrantKind, id: &str) -> Result<Option<Value>, OAuthError> {
        self.backend
            .update(kind, id, &mut |doc| {
                (doc["used"] == Value::Bool(false)).then(|| {
                    let mut d = doc.clone();
                    d["used"] = Value::Bool(true);
                    d
                })
            })
            .map_err(|_| OAuthError::ServerError("the store failed"))
    }

    pub(super) fn revoke_family(&self, family: &str) -> Result<(), OAuthError> {
        self.backend
            .put(GrantKind::Family, family, &json!({ "revoked": true }), None)
            .map_err(|_| OAuthError::ServerError("the store failed"))
    }

    pub(super) fn family_revoked(&self, family: &str) -> Result<bool, OAuthError> {
        Ok(self
            .backend
            .get(GrantKind::Family, family)
            .map_err(|_| OAuthError::ServerError("the store failed"))?
            .is_some_and(|d| d["revoked"] == Value::Bool(true)))
    }

    pub(super) fn redeem(
        &self,
        p: &Params,
        client_id: &str,
        env: &Env,
    ) -> Result<Value, OAuthError> {
        let code = p
            .get("code")
            .ok_or(OAuthError::InvalidRequest("code is missing"))?;
        let doc = self
            .take(GrantKind::Code, &digest(code))?
            .ok_or(OAuthError::InvalidGrant("unknown code"))?;
        let family = doc["family"].as_str().unwrap_or_default().to_owned();
        if doc["used"] != Value::Bool(false) {
            // RFC 6749 §4.1.2: a code used twice revokes what it gave.
            self.revoke_family(&family)?;
            return Err(OAuthError::InvalidGrant("the code was already used"));
        }
        if doc["exp"].as_u64().unwrap_or(0) <= env.now.as_millis() {
            return Err(OAuthError::InvalidGrant("the code expired"));
        }
        if doc["client_id"].as_str() != Some(client_id) {
            return Err(OAuthError::InvalidGrant(
                "the code was issued to another client",
            ));
        }
        if p.get("redirect_uri") != doc["redirect_uri"].as_str() {
            return Err(OAuthError::InvalidGrant(
                "redirect_uri differs from the authorization request's",
            ));
        }
        let verifier = p
            .get("code_verifier")
            .ok_or(OAuthError::InvalidGrant("code_verifier is missing"))?;
        if !pkce::verify(verifier, doc["challenge"].as_str().unwrap_or_default()) {
            return Err(OAuthError::InvalidGrant("the code_verifier does not match"));
        }
        let resource = doc["resource"].as_str().unwrap_or_default();
        if let Some(r) = p.get("resource") {
            if self.resource(Some(r))? != resource {
                return Err(OAuthError::InvalidTarget(
                    "the code was issued for another resource",
                ));
            }
        }
        self.issue(
            &doc,
            &family,
            client_id,
            doc["scope"].as_str().unwrap_or_default(),
            env,
        )
    }

    pub(super) fn refresh(
        &self,
        p: &Params,
        client_id: &str,
        env: &Env,
    ) -> Result<Value, OAuthError> {
        let token = p
            .get("refresh_token")
            .ok_or(OAuthError::InvalidRequest("refresh_token is missing"))?;
        // Checked before the token is spent, so that a request the client got wrong
        // (another scope, another resource) does not cost it its grant; spending it is
        // then the atomic step (a concurrent use of the same token loses there).
        let id = digest(token);
        let doc = self
            .backend
            .get(GrantKind::Refresh, &id)
            .map_err(|_| OAuthError::ServerError("the store failed"))?
            .ok_or(OAuthError::InvalidGrant("unknown refresh token"))?;
        let family = doc["family"].as_str().unwrap_or_default().to_owned();
        if doc["used"] != Value::Bool(false) {
            // Reuse of a rotated token: someone holds a copy. Revoke the whole family.
            self.revoke_family(&family)?;
            return Err(OAuthError::InvalidGrant(
                "the refresh token was already used: its family is revoked",
            ));
        }
        if self.family_revoked(&family)? {
            return Err(OAuthError::InvalidGrant("the refresh token was revoked"));
        }
        if doc["exp"].as_u64().unwrap_or(0) <= env.now.as_millis() {
            return Err(OAuthError::InvalidGrant("the refresh token expired"));
        }
        if doc["client_id"].as_str() != Some(client_id) {
            return Err(OAuthError::InvalidGrant(
                "the refresh token was issued to another client",
            ));
        }
        let resource = doc["resource"].as_str().unwrap_or_default();
        if let Some(r) = p.get("resource") {
            if self.resource(Some(r))? != resource {
                return Err(OAuthError::InvalidTarget(
                    "the refresh token was issued for another resource",
                ));
            }
        }
        let had: Vec<&str> = doc["scope"]
            .as_str()
            .unwrap_or_default()
            .split(' ')
            .collect();
        let scope = match p.get("scope") {
            None => had.join(" "),
            Some(asked) => {
                let asked: Vec<&str> = asked.split(' ').filter(|s| !s.is_empty()).collect();
                if asked.iter().any(|s| !had.contains(s)) {
                    return Err(OAuthError::InvalidScope(
                        "a refresh may only narrow the scopes granted",
                    ));
                }
                asked.join(" ")
            }
        };
        let spent = self
            .take(GrantKind::Refresh, &id)?
            .ok_or(OAuthError::InvalidGrant("unknown refresh token"))?;
        if spent["used"] != Value::Bool(false) {
            self.revoke_family(&family)?;
            return Err(OAuthError::InvalidGrant(
                "the refresh token was already used: its family is revoked",
            ));
        }
        self.issue(&doc, &family, client_id, &scope, env)
    }

    /// Signs an access token and stores a fresh refresh token of `family`.
    pub(super) fn issue(
        &self,
        grant: &Value,
        family: &str,
        client_id: &str,
        scope: &str,
        env: &Env,
    ) -> Result<Value, OAuthError> {
        if self.family_revoked(family)? {
            return Err(OAuthError::InvalidGrant("the grant was revoked"));
        }
        let iat = env.now.as_secs();
        let claims = json!({
            "iss": self.config.issuer,
            "sub": grant["sub"],
            "aud": grant["resource"],
            "org": grant["org"],
            "scope": scope,
            "client_id": client_id,
            "jti": URL_SAFE_NO_PAD.encode(&derive(env, b"jti")[..16]),
            "iat": iat,
            "exp": iat + self.config.access_ttl_secs,
        });
        let access = crate::jwt::sign_ed25519(&self.kid, &claims, &self.seed);
        let refresh = URL_SAFE_NO_PAD.encode(derive(env, b"refresh"));
        let expires = env.now.plus_millis(self.config.refresh_ttl_secs * 1000);
        let doc = json!({
            "client_id": client_id,
            "scope": scope,
            "resource": grant["resource"],
            "sub": grant["sub"],
            "org": grant["org"],
            "family": family,
            "exp": expires.as_millis(),
            "used": false,
        });
        self.backend
            .put(GrantKind::Refresh, &digest(&refresh), &doc, Some(expires))
            .map_err(|_| OAuthError::ServerError("the store failed"))?;
        Ok(json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.config.access_ttl_secs,
            "refresh_token": refresh,
            "scope": scope,
        }))
    }
}
