package tracestudy

import (
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/swf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A date is midnight in the log's time zone, in seconds after its
// UnixStartTime (SDSC-SP2: 893466664, US/Pacific): 1999-01-03 00:00 PST
// is 08:00 UTC, 915350400 − 893466664 = 21883736 s; in summer
// (1998-07-01, PDT, UTC−7) 899276400 − 893466664 = 5809736 s. Days are
// 86400 s each; seconds are as written.
func TestWindowEndsByHand(t *testing.T) {
	h := &swf.Header{UnixStartTime: 893466664, TimeZone: -28800, HasTimeZone: true, TimeZoneString: "US/Pacific"}
	for s, want := range map[string]int64{"1999-01-03": 21883736, "252d": 21772800, "252.5d": 21816000, "21772800": 21772800} {
		got, err := windowEnd(s, h)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	if _, err := time.LoadLocation("US/Pacific"); err == nil {
		got, err := windowEnd("1998-07-01", h)
		require.NoError(t, err)
		assert.Equal(t, int64(5809736), got, "daylight saving time from the zone database")
	}
	_, err := windowEnd("1999-01-03", nil)
	assert.ErrorContains(t, err, "a date needs the log's header")
	_, err = windowEnd("1999-01-03", &swf.Header{})
	assert.ErrorContains(t, err, "no UnixStartTime")
}

// --window never panics, and what it accepts is a window: START ≥ 0 and
// END empty (0) or after START.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"0:864000", "252d:280d", "1999-01-03:", "1998-13-01:1999-01-01", ":", "5", "1e3d:2", "-1:5", "9999999999999999999:"} {
		f.Add(s)
	}
	h := &swf.Header{UnixStartTime: 893466664, TimeZone: -28800, HasTimeZone: true}
	f.Fuzz(func(t *testing.T, s string) {
		from, until, err := parseWindowAt(s, h)
		if err != nil {
			return
		}
		if from < 0 || (until != 0 && until <= from) {
			t.Fatalf("%q: [%d, %d)", s, from, until)
		}
	})
}
