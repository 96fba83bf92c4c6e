package service

import (
	"testing"
	"time"
)

// A long poll must end well within the server's write timeout, or the
// server cuts its answer off; a graceful shutdown must not wait for it
// either (waitBoard.shutdown ends it).
func TestMaxRequestWaitFitsWriteTimeout(t *testing.T) {
	if MaxRequestWait+5*time.Second > writeTimeout {
		t.Fatalf("MaxRequestWait %v leaves less than 5 s of the write timeout %v", MaxRequestWait, writeTimeout)
	}
}
