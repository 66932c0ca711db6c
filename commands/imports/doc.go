// Package imports is the import pipeline: everything between an upload's
// body and the events its records become, for every entity. It is part of
// the write side (commands), in a package of its own because it is one
// mechanism, read top to bottom in this order:
//
//   - Staging. stage_upload.go (StageUpload: who may upload what) streams
//     the body through internal/ingest's decoders into chunks of about a
//     thousand records (stage.go, stage_writer.go), one short transaction
//     a chunk, and schedules the run with one message a chunk on
//     ChunksTopic (messages.go), in the transaction that makes it
//     "scheduled". run_data_query.go stages the matches of a data query
//     the same way. store.go and restage.go keep the runs.
//   - Scheduling. worker.go (ImportWorker) takes the messages, one
//     company's chunks in upload order (chunk_pending.go), resuming from
//     the staged chunks after a lost message or a failure
//     (worker_config.go, worker_metrics.go).
//   - One chunk. chunk.go (ImportChunkHandler) locks the chunk
//     (chunk_store.go), hands its records to the entity's Importer
//     (importer.go) in one transaction, checks the outcome and stores it
//     with the rejections and warnings (chunk_store_warnings.go,
//     outcome_warnings.go); ahead.go parses the next chunk while this one
//     is in its transaction, and resolves it (Resolver: customers,
//     events, sales) once this one is resolved; chunk_isolate.go finds
//     the records the database refuses when a chunk keeps failing.
//   - The Importers. customers.go, events.go, sales.go, products.go,
//     shops.go: parse, decide against the write-side state, append one
//     commit. The write-side state and how a chunk decides against it:
//     customer_link.go, customer_state.go, customer_state_save.go,
//     customer_commit.go (customers, shared by events and sales that
//     create their customer), product_link.go and product_state.go,
//     sale_state.go, shop_state.go. issue_customer_tokens.go gives the
//     customers of before tracking tokens theirs, on the same state.
//
// The chunk's commit then reaches the read models through the projection
// runtime (package projections). docs/architecture.md ("The import
// pipeline") follows one upload along this path.
package imports
