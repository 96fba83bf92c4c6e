package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldLease: a held lease's GPUs stay counted past its own expiry
// until the hold's end, and no request gets them meanwhile; the hold
// never shortens a lease, and a lease not held is an error.
func TestHoldLease(t *testing.T) {
	b, err := New(DefaultConfig(4))
	require.NoError(t, err)
	a, err := b.Register(Envelope{Name: "a", Budget: 1e6, Guaranteed: 4, Sustained: 4, BurstCeiling: 4, Bucket: 1e6, Class: Deadline})
	require.NoError(t, err)
	o, err := b.Register(Envelope{Name: "o", Budget: 1e6, Guaranteed: 0, Sustained: 4, BurstCeiling: 4, Bucket: 1e6, Class: Deadline})
	require.NoError(t, err)
	_, err = b.Request(a, 4, 3, Deadline)
	require.NoError(t, err)
	b.Tick()
	require.Len(t, b.Leases(), 1)
	lease := b.Leases()[0].ID
	moved, err := b.HoldLease(a, lease, b.Now()+1)
	require.NoError(t, err)
	assert.False(t, moved, "never earlier than the lease's own end")
	_, err = b.Request(o, 1, 10, Deadline)
	require.NoError(t, err)
	end := b.Leases()[0].Expires
	moved, err = b.HoldLease(a, lease, end+2)
	require.NoError(t, err)
	assert.True(t, moved)
	for b.Now() < end+1 {
		b.Tick()
		assert.Equal(t, 0, b.Free(), "t=%d: the held lease's GPUs are counted", b.Now())
		assert.Equal(t, 0, b.Held(o, AnyClass), "t=%d: nobody else gets them", b.Now())
	}
	b.Tick()
	b.Tick()
	assert.Equal(t, 0, b.Held(a, AnyClass), "released at the hold's end")
	assert.Equal(t, 4, b.Free()+b.Held(o, AnyClass), "its GPUs are free, or granted")
	_, err = b.HoldLease(a, lease, b.Now()+5)
	assert.Error(t, err)
}
