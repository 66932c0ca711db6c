package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
)

// addSFTPKeyRequest is the body of POST /api/sftp-keys/.
type addSFTPKeyRequest struct {
	PublicKey string `json:"public_key"`
	Name      string `json:"name"`
}

// sftpKeyJSON is a registered key as answered: its fingerprint identifies
// it to whoever holds the private key (ssh-keygen -lf).
type sftpKeyJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
	CreatedAt   string `json:"created_at"`
}

func newSFTPKeyJSON(k access.SFTPKey) sftpKeyJSON {
	return sftpKeyJSON{ID: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, CreatedAt: timestamp(k.CreatedAt)}
}

// handleAddSFTPKey serves POST /api/sftp-keys/ (admin role): it registers
// a public key that logs in to the company's SFTP drop directory.
func (s *Server) handleAddSFTPKey(c *gin.Context) error {
	var req addSFTPKeyRequest
	if err := decodeJSON(c.Request, &req, false); err != nil {
		return err
	}
	p, _ := principalOf(c)
	k, err := s.commands.AddSFTPKey.Handle(commandContext(c), commands.AddSFTPKey{Principal: p, PublicKey: req.PublicKey, Name: req.Name})
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"sftp_key": newSFTPKeyJSON(k)})
	return nil
}

// handleListSFTPKeys serves GET /api/sftp-keys/ (admin role): the
// company's keys, oldest first.
func (s *Server) handleListSFTPKeys(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := access.MayManageSFTPKeys(p); err != nil {
		return err
	}
	keys, err := s.sftpKeys.List(c.Request.Context(), p.CompanyID)
	if err != nil {
		return err
	}
	out := make([]sftpKeyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, newSFTPKeyJSON(k))
	}
	c.JSON(http.StatusOK, gin.H{"sftp_keys": out})
	return nil
}

// handleRemoveSFTPKey serves DELETE /api/sftp-keys/<id>/ (admin role):
// the key no longer logs in.
func (s *Server) handleRemoveSFTPKey(c *gin.Context) error {
	p, _ := principalOf(c)
	if err := s.commands.RemoveSFTPKey.Handle(commandContext(c), commands.RemoveSFTPKey{Principal: p, KeyID: c.Param("id")}); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"response": "ok"})
	return nil
}
