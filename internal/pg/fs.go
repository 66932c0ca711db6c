package pg

import (
	"hash"
	"hash/fnv"
	"io/fs"
)

func fsSub() (fs.FS, error) { return fs.Sub(migrations, "migrations") }

func fnv64() hash.Hash64 { return fnv.New64a() }
