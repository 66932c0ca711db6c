package imports_test

import (
	"os"
	"testing"
	"time"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// now is the clock of the importers under test.
var now = time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
