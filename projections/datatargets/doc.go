// Package datatargets keeps the datatargets read model: the datatargets,
// the messages posted to their queues (datatarget_messages) and their
// webhook outlets, in one inline projector, so that a client that posts
// reads its messages at once.
package datatargets
