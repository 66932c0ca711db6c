// Package document folds domain events into the documents the read
// models keep, shared by the projectors that write them: the customer, the
// activity, the sale and the catalog (product, shop) documents as
// retrieval stores them, the datasync feeds send them and campaign
// statistics read them; the sealing of personal fields with a customer's
// data key; and the JSON values, decoded with their numbers kept exact.
package document
