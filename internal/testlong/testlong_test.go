package testlong

import "testing"

func TestSkipFollowsTheVariable(t *testing.T) {
	t.Setenv(Env, "1")
	if !Enabled() {
		t.Fatal("BURSAR_LONG=1 must enable the long tests")
	}
	t.Setenv(Env, "0")
	if Enabled() {
		t.Fatal("only BURSAR_LONG=1 enables them")
	}
	ran := false
	t.Run("skipped", func(t *testing.T) {
		Skip(t, "nothing")
		ran = true
	})
	if ran {
		t.Fatal("Skip did not skip")
	}
}
