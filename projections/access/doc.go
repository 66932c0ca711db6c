// Package access keeps the read models of tenancy and access: companies,
// users, integrations, access tokens and SFTP keys. Its projectors are
// inline (projectors.Inline): every request reads its company and its
// token, and a client must see them at once after creating them.
package access
