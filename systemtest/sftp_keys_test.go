package systemtest_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sftpKeyLine returns a fresh ed25519 public key as an authorized_keys
// line, and its fingerprint.
func sftpKeyLine(t *testing.T, comment string) (line, fingerprint string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " " + comment, ssh.FingerprintSHA256(k)
}

type sftpKeyAnswer struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	CreatedAt   string `json:"created_at"`
}

// TestSFTPKeysAPI: an admin registers, lists and removes the company's
// SFTP keys; staff may not; keys are the company's own; what is not one
// plain public key is refused.
func TestSFTPKeysAPI(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	globex := e.userToken(e.globexAd, globexHost)

	line, fp := sftpKeyLine(t, "erp@acme")
	res := e.do(http.MethodPost, "/api/sftp-keys/", bearer(admin), jsonBody(map[string]string{"public_key": line, "name": "ERP"}))
	res.wantStatus(t, http.StatusOK)
	var added struct {
		Key sftpKeyAnswer `json:"sftp_key"`
	}
	res.decode(t, &added)
	if added.Key.ID == "" || added.Key.Name != "ERP" || added.Key.Fingerprint != fp || added.Key.CreatedAt == "" {
		t.Errorf("answer %s", res.body)
	}
	// Without a name, the key's comment names it.
	line2, _ := sftpKeyLine(t, "backup@acme")
	res = e.do(http.MethodPost, "/api/sftp-keys", bearer(admin), jsonBody(map[string]string{"public_key": line2}))
	res.wantStatus(t, http.StatusOK)

	res = e.do(http.MethodGet, "/api/sftp-keys/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var list struct {
		Keys []sftpKeyAnswer `json:"sftp_keys"`
	}
	res.decode(t, &list)
	if len(list.Keys) != 2 || list.Keys[0] != added.Key || list.Keys[1].Name != "backup@acme" {
		t.Errorf("list %s", res.body)
	}

	// Staff may not; another company sees none and cannot remove it.
	e.do(http.MethodGet, "/api/sftp-keys/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodPost, "/api/sftp-keys/", bearer(staff), jsonBody(map[string]string{"public_key": line})).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodDelete, "/api/sftp-keys/"+added.Key.ID+"/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	res = e.do(http.MethodGet, "/api/sftp-keys/", bearer(globex), host(globexHost))
	res.wantStatus(t, http.StatusOK)
	if !strings.Contains(string(res.body), `"sftp_keys":[]`) {
		t.Errorf("globex's list %s", res.body)
	}
	e.do(http.MethodDelete, "/api/sftp-keys/"+added.Key.ID+"/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")

	for name, key := range map[string]string{
		"empty":       "",
		"not a key":   "hello world",
		"options":     `from="10.0.0.1" ` + line,
		"private key": "-----BEGIN OPENSSH PRIVATE KEY-----",
		"two keys":    line + "\n" + line2,
	} {
		t.Run(name, func(t *testing.T) {
			e.do(http.MethodPost, "/api/sftp-keys/", bearer(admin), jsonBody(map[string]string{"public_key": key})).
				wantError(t, http.StatusUnprocessableEntity, "validation_error")
		})
	}

	res = e.do(http.MethodDelete, "/api/sftp-keys/"+added.Key.ID+"/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	e.do(http.MethodDelete, "/api/sftp-keys/"+added.Key.ID+"/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	res = e.do(http.MethodGet, "/api/sftp-keys/", bearer(admin))
	res.decode(t, &list)
	if len(list.Keys) != 1 {
		t.Errorf("after the removal: %s", res.body)
	}
}
