package console

import (
	"context"
	"strings"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain"
)

// actors names the actors of event metadata ("users/<id>",
// "tokens/<id>", "sftp-keys/<id>", "system") as people read them: a
// user by its email, a token by its name and whose it is (a user's email
// or an integration's name), an SFTP key by its name. A page makes one
// and asks it for each actor: each user, the tokens and the
// integrations are read once a page.
type actors struct {
	ctx       context.Context
	q         app.Queries
	companyID string
	users     map[string]string
	tokens    map[string]tokenName
	// integrations are the company's integrations' names by owner id
	// ("integrations/<id>").
	integrations map[string]string
	sftpKeys     map[string]string
}

type tokenName struct{ Name, Owner string }

func newActors(ctx context.Context, q app.Queries, companyID string) *actors {
	return &actors{ctx: ctx, q: q, companyID: companyID, users: map[string]string{}}
}

// name is how a page names actor; an actor that is gone (a removed user,
// a revoked token) is named by its kind. An error is the database's.
func (a *actors) name(actor string) (string, error) {
	kind, id, _ := strings.Cut(actor, "/")
	switch kind {
	case "users":
		return a.user(id)
	case "tokens":
		if err := a.readTokens(); err != nil {
			return "", err
		}
		t, ok := a.tokens[id]
		if !ok {
			return "a revoked token", nil
		}
		owner, err := a.owner(t.Owner)
		if err != nil {
			return "", err
		}
		if t.Name == "" {
			return owner + ", with a token", nil
		}
		return owner + ", with the token “" + t.Name + "”", nil
	case "sftp-keys":
		if a.q.SFTPKeys == nil {
			return "an SFTP key", nil
		}
		if a.sftpKeys == nil {
			keys, err := a.q.SFTPKeys.List(a.ctx, a.companyID)
			if err != nil {
				return "", err
			}
			a.sftpKeys = map[string]string{}
			for _, k := range keys {
				a.sftpKeys[k.ID] = k.Name
			}
		}
		if n := a.sftpKeys[id]; n != "" {
			return "the SFTP key “" + n + "”", nil
		}
		return "an SFTP key", nil
	case "system", "":
		return "the system", nil
	}
	return actor, nil
}

// owner names a token's owner: "users/<id>" or "integrations/<id>".
func (a *actors) owner(owner string) (string, error) {
	kind, id, _ := strings.Cut(owner, "/")
	if kind == "users" {
		return a.user(id)
	}
	if a.integrations == nil {
		list, err := a.q.Access.Integrations(a.ctx, a.companyID)
		if err != nil {
			return "", err
		}
		a.integrations = map[string]string{}
		for _, in := range list {
			a.integrations["integrations/"+in.ID] = in.Name
		}
	}
	if n, ok := a.integrations[owner]; ok {
		return "the integration " + n, nil
	}
	return "a removed integration", nil
}

func (a *actors) user(id string) (string, error) {
	if n, ok := a.users[id]; ok {
		return n, nil
	}
	u, err := a.q.Access.User(a.ctx, a.companyID, id)
	switch {
	case domain.ErrorCode(err) == domain.NotFound:
		a.users[id] = "a removed user"
	case err != nil:
		return "", err
	default:
		a.users[id] = u.Email
	}
	return a.users[id], nil
}

func (a *actors) readTokens() error {
	if a.tokens != nil {
		return nil
	}
	list, err := a.q.Access.AccessTokens(a.ctx, a.companyID)
	if err != nil {
		return err
	}
	a.tokens = map[string]tokenName{}
	for _, t := range list {
		a.tokens[t.ID] = tokenName{Name: t.Name, Owner: t.OwnerID}
	}
	return nil
}
