// Package campaignstats keeps the campaigns read model (inline) and the
// campaign statistics (async): each campaign's audience, conversions and
// figures, folded from the activity and the sales of its members, and
// the datasync messages of campaigns with their statistics.
package campaignstats
