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

// TestEndLeaseBy: a lease ended early keeps its GPUs counted until the
// new end and no later, a hold moves that end on again, a later end does
// not lengthen the lease, and an end at now is refused. Hand-worked: a
// 100 s lease granted at t=1 ended by t=4 is gone at t=4; held to t=6
// it is gone at t=6.
func TestEndLeaseBy(t *testing.T) {
	b, err := New(DefaultConfig(4))
	require.NoError(t, err)
	a, err := b.Register(Envelope{Name: "a", Budget: 1e6, Guaranteed: 4, Sustained: 4, BurstCeiling: 4, Bucket: 1e6, Class: Deadline})
	require.NoError(t, err)
	_, err = b.Request(a, 4, 100, Deadline)
	require.NoError(t, err)
	b.Tick()
	require.Len(t, b.Leases(), 1)
	lease := b.Leases()[0].ID
	_, err = b.EndLeaseBy(a, lease, b.Now())
	assert.Error(t, err, "an end at now")
	moved, err := b.EndLeaseBy(a, lease, 1000)
	require.NoError(t, err)
	assert.False(t, moved, "never later than the lease's own end")
	moved, err = b.EndLeaseBy(a, lease, 4)
	require.NoError(t, err)
	assert.True(t, moved)
	b.Tick() // t=2
	_, err = b.HoldLease(a, lease, 6)
	require.NoError(t, err)
	for b.Now() < 6 {
		assert.Equal(t, 4, b.Held(a, AnyClass), "t=%d: held until t=6", b.Now())
		b.Tick()
	}
	assert.Equal(t, 0, b.Held(a, AnyClass), "t=%d: gone at the hold's end", b.Now())

	// Without the hold, the lease goes at the early end, not at its own.
	_, err = b.Request(a, 4, 100, Deadline)
	require.NoError(t, err)
	b.Tick()
	require.Len(t, b.Leases(), 1)
	_, err = b.EndLeaseBy(a, b.Leases()[0].ID, b.Now()+2)
	require.NoError(t, err)
	b.Tick()
	assert.Equal(t, 4, b.Held(a, AnyClass))
	b.Tick()
	assert.Equal(t, 0, b.Held(a, AnyClass), "gone at its early end")
	assert.Equal(t, 4, b.Free())
}
