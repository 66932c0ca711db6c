// Package datasync keeps the datasync feeds: for every datasync
// datatarget, the messages of the changes to the entities of its datatype
// (customers, products, shops, events, sales), restricted to the fields it
// asks for. It holds personal data and declares what it does on a forget
// (projections.Forgetter).
package datasync
