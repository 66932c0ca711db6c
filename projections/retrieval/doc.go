// Package retrieval keeps the read models of retrieval, async: customers,
// products, shops, events (the activity) and sales, each as the document
// GET /api/data answers, with the columns its queries filter on. The
// customers, events and sales projectors hold personal data and declare
// what they do on a forget (projections.Forgetter).
package retrieval
