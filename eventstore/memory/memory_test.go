package memory_test

import (
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/memory"
	"github.com/clientele/clientele/eventstore/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) eventstore.Store { return memory.New() })
}

func TestZeroValue(t *testing.T) {
	storetest.Run(t, func(*testing.T) eventstore.Store { return new(memory.Store) })
}
