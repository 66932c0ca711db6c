package imports

import (
	"encoding/json"
	"fmt"
)

// ChunksTopic is the Watermill topic of staged chunks: one message per
// chunk, in upload order. Its outbox tables (watermill_import_chunks and
// watermill_offsets_import_chunks) are created by the migrations.
const ChunksTopic = "import_chunks"

// ChunkMessage is the payload of a message on ChunksTopic. It names the
// chunk; the records stay in import_chunks, so a message is small and the
// raw data exists once (and can be deleted once processed).
type ChunkMessage struct {
	RunID     string `json:"run_id"`
	Seq       int    `json:"seq"`
	CompanyID string `json:"company_id"`
}

// ParseChunkMessage decodes and checks a chunk message's payload.
func ParseChunkMessage(payload []byte) (ChunkMessage, error) {
	var m ChunkMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return ChunkMessage{}, fmt.Errorf("imports: chunk message: %w", err)
	}
	if m.RunID == "" || m.Seq < 0 {
		return ChunkMessage{}, fmt.Errorf("imports: chunk message %s names no chunk", payload)
	}
	return m, nil
}
