// Package export writes a company's read models as of an instant to
// files an analyst opens in DuckDB, pandas or Spark: one file per read
// model, Parquet with typed columns or NDJSON.
//
// It replays the company's log up to the instant into scratch copies of
// the read-model tables with the projectors themselves
// (projections.Scratch, the same Apply as a rebuild), then streams each
// copy out, row by row, a Parquet row group at a time: memory stays
// bounded whatever the size. The copies are dropped afterwards, on
// failure or interrupt too. A customer forgotten since the instant is
// exported in its forgotten form: its data key is gone, so the replay
// opens none of its personal data.
//
// What is exported is the list Tables (tables.go): a new read model
// (segment members, say) is one more Table there, with the projector that
// keeps it handed to Config.Projectors.
package export
