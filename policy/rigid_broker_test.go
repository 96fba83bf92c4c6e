package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A trace job its campaign can never hold is denied when it is filed:
// wider than the prepaid cap with a full bucket, or than the pool less the
// other campaigns' guarantees (the reserve grantable keeps for them).
func TestRequestRigidDeniesWhatCanNeverStart(t *testing.T) {
	b, j := newBroker(t, 100)
	lab := mustRegister(t, b, env("lab", 40, 100, 100, 1e12, AgentBurst))
	user := mustRegister(t, b, filler("user", 100, AgentBurst))
	slow := mustRegister(t, b, env("slow", 0, 1, 100, 10, AgentBurst))

	// 61 > 100 − 40: never grantable while lab's guarantee is reserved.
	id, err := b.RequestRigid(user, 61, 10, 10, AnyClass, 1)
	require.True(t, errors.Is(err, ErrExceedsLimit), "err %v", err)
	deny := j.of(EventDeny)
	require.Len(t, deny, 1)
	require.Equal(t, ReasonExceedsLimit, deny[0].Reason)
	require.Equal(t, 61, deny[0].GPUs)
	require.Empty(t, b.Pending())

	// 60 fits beside lab's reserve, and starts at once.
	id2, err := b.RequestRigid(user, 60, 10, 10, AnyClass, 1)
	require.NoError(t, err)
	require.Equal(t, id+1, id2, "a denial takes an id")
	// The cap with a full bucket: trunc(1 + 10/10) = 2 GPUs for 10 s.
	_, err = b.RequestRigid(slow, 3, 10, 10, AnyClass, 1)
	require.True(t, errors.Is(err, ErrExceedsLimit), "err %v", err)
	_, err = b.RequestRigid(slow, 2, 10, 10, AnyClass, 1)
	require.NoError(t, err)

	b.Tick()
	require.Equal(t, 60, b.Held(user, AnyClass))
	// slow's job waits: the other 40 GPUs are lab's reserve.
	require.Len(t, b.Pending(), 1)
	// lab's own guarantee does not count against it: the whole pool.
	_, err = b.RequestRigid(lab, 100, 10, 10, AnyClass, 2)
	require.NoError(t, err)
	require.Len(t, j.of(EventDeny), 2)
}
