package access

import "github.com/clientele/clientele/domain"

// Who reads what. The interface has no read endpoints for integrations,
// histories or token lists, so these rules are ours; every edge (the
// HTTP API, the web console) asks them, so that a page never shows what
// the API would hide.

// IsAdmin reports whether p holds the admin role (or one that implies
// it): the one admin check of the edges, which decides who sees outlet
// credentials (MayReadCredentials) and every token of the company
// (SeesEveryAccessToken), and which role the console names.
func IsAdmin(p Principal) bool { return p.HasRole(RoleAdmin) }

// MayReadCredentials reports whether p may see the credentials an
// outlet's request may carry (its headers, the query values and password
// of its URL, and the same in its attempts' raw texts) as they are:
// admins, who may change the outlet anyway. Others see them masked.
func MayReadCredentials(p Principal) bool { return IsAdmin(p) }

// MayReadCustomerHistory decides who reads customers' audit histories:
// staff and admins (and tokens carrying their roles). An integration
// reads customers through retrieval; the audit trail also names every
// actor, which is the company's business, not a connector's.
func MayReadCustomerHistory(p Principal) error {
	if p.HasRole(RoleStaff) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "reading customer history requires the staff or admin role")
}

// MayReadIntegration decides who reads integrations: staff and admins
// read them all, an integration's own token reads that integration (id;
// "" for the list, MayReadIntegrations).
func MayReadIntegration(p Principal, id string) error {
	if p.HasRole(RoleStaff) || (id != "" && p.OwnerID == IntegrationOwner(id)) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "reading integrations requires the staff or admin role")
}

// MayReadIntegrations decides whether p may list the company's
// integrations (MayReadIntegration of no one integration).
func MayReadIntegrations(p Principal) error { return MayReadIntegration(p, "") }

// VisibleAccessTokens keeps the tokens p may see: those p may revoke
// (MayRevokeAccessToken), so that a list never shows a token its reader
// could not revoke, nor hides one it could. A user sees its own, an
// integration's token those of its integration, an admin every token of
// the company (SeesEveryAccessToken). tokens are one company's, p's.
func VisibleAccessTokens(p Principal, tokens []AccessToken) []AccessToken {
	out := make([]AccessToken, 0, len(tokens))
	for _, t := range tokens {
		if MayRevokeAccessToken(p, t.OwnerID) == nil {
			out = append(out, t)
		}
	}
	return out
}

// SeesEveryAccessToken reports whether VisibleAccessTokens keeps every
// token of p's company: an admin's view.
func SeesEveryAccessToken(p Principal) bool { return IsAdmin(p) }

// MayReadChanges decides who reads the company's log as a feed of
// changes (GET /api/changes/): admins. The feed names every actor and
// shows every change of every entity, access and outlets included.
func MayReadChanges(p Principal) error {
	if IsAdmin(p) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "reading the company's changes requires the admin role")
}

// CredentialFields are the members of recorded events' data that hold a
// credential: a user's password hash and TOTP secret, an access token's
// hash, an outlet's signing secret. No answer shows them (an outlet's
// secret is answered as has_secret); the feed of changes shows them
// redacted.
var CredentialFields = []string{"password_hash", "totp_secret", "token_hash", "secret"}

// MayChangeCompanySettings decides who changes the company's settings
// (its exchange rates among them): admins.
func MayChangeCompanySettings(p Principal) error {
	if p.HasRole(RoleAdmin) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "changing company settings requires the admin role")
}
