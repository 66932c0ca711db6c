package crypto

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Bulky texts kept only until they are erased (staged uploads, the raw
// texts of outlet attempts) are compressed, then sealed: sealed bytes do
// not compress, and PostgreSQL's own compression of large values (TOAST)
// took a tenth of their size before they were sealed.

// The coders are safe for concurrent use of EncodeAll and DecodeAll.
var (
	compressor, _   = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	decompressor, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxCompressedOpen))
)

// MaxCompressedOpen bounds what OpenCompressed returns: 256 MiB.
const MaxCompressedOpen = 256 << 20

// SealCompressed compresses plaintext (zstd), then seals it as Seal does.
func SealCompressed(dataKey, plaintext, aad []byte) ([]byte, error) {
	return Seal(dataKey, compressor.EncodeAll(plaintext, nil), aad)
}

// OpenCompressed opens what SealCompressed sealed; ErrDecrypt when the
// key does not open it.
func OpenCompressed(dataKey, sealed, aad []byte) ([]byte, error) {
	compressed, err := Open(dataKey, sealed, aad)
	if err != nil {
		return nil, err
	}
	plain, err := decompressor.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("crypto: decompress opened data: %w", err)
	}
	return plain, nil
}
