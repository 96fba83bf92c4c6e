package slurmtoken

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A token spent on a submission that slurmctld then refuses (an
// association it does not have, `--test-only`, a reservation or node
// list it does not know: all checked after job_submit/lua) admitted no
// job, and the lease would be lost: issue 35. So a claim is checked once
// the submission is over. The check that made it starts a verifier
// (VerifyClaim), detached, which asks Slurm after VerifyAfter and again after
// VerifyAgain whether a job carries the token, and removes the claim when
// none ever did: the token then admits a job again. The verifier runs
// outside slurmctld's job lock (its squeue waits for the submission to
// finish), and removes only its own claim (the nonce it holds), never a
// released lease's record (MarkReleased) nor a later claim.

// When the verifier asks Slurm, after the claim.
var (
	VerifyAfter = time.Second
	VerifyAgain = 3 * time.Second
)

// verifyArg starts a verifier's arguments to the check's binary.
const verifyArg = "verify-claim"

// claimMark starts a claim's record: "claimed NONCE".
const claimMark = "claimed "

// newNonce names one claim.
func newNonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startVerifier runs this binary again, detached (its own session, no
// standard streams: the plugin's popen reads the check's answer to its
// end without waiting for it), as the verifier of the claim in dir for
// tok.
func startVerifier(dir, tok, nonce string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// "slurm check" first: the bursar binary routes the rest to RunCheck
	// as bursar-slurm-check does (which drops the two words).
	cmd := exec.Command(self, "slurm", "check", verifyArg, "--once-dir", dir, "--nonce", nonce, tok)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// Jobs lists the comments of the jobs Slurm knows (every state, finished
// ones for MinJobAge): what the verifier looks for the token in.
type Jobs func(ctx context.Context) ([]string, error)

// SqueueComments is Jobs from `squeue -h -t all -o %k`.
func SqueueComments(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "squeue", "-h", "-t", "all", "-o", "%k").Output()
	if err != nil {
		return nil, fmt.Errorf("squeue: %w", err)
	}
	return strings.Split(string(out), "\n"), nil
}

// ErrClaimKept is VerifyClaim's answer when a job carries the token or the
// claim is no longer the verifier's.
var ErrClaimKept = errors.New("the claim stands")

// VerifyClaim is the verifier: it removes the claim nonce of the lease tok
// names from dir when jobs lists no job carrying tok, at each of the
// waits; it keeps it (ErrClaimKept, or the error that kept it) when a
// job does, when Slurm cannot be asked, or when the record is no longer
// that claim. sleep waits (time.Sleep outside tests).
func VerifyClaim(dir, tok, nonce string, jobs Jobs, sleep func(time.Duration), waits ...time.Duration) error {
	l, err := Parse(tok)
	if err != nil {
		return err
	}
	for _, w := range waits {
		sleep(w)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := jobs(ctx)
		cancel()
		if err != nil {
			return err // Slurm cannot say: the token stays spent
		}
		for _, c := range list {
			if strings.TrimSpace(c) == tok {
				return ErrClaimKept
			}
		}
	}
	path := claimPath(dir, l)
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, []byte(claimMark+nonce+"\n")) {
		return ErrClaimKept
	}
	return os.Remove(path)
}

// runVerify reads a verifier's arguments (verify-claim --once-dir DIR
// --nonce N TOKEN) and runs it against squeue.
func runVerify(args []string) error {
	var dir, nonce, tok string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--once-dir" && i+1 < len(args):
			i++
			dir = args[i]
		case args[i] == "--nonce" && i+1 < len(args):
			i++
			nonce = args[i]
		case !strings.HasPrefix(args[i], "-") && tok == "":
			tok = args[i]
		default:
			return fmt.Errorf("%s: unexpected argument %q", verifyArg, args[i])
		}
	}
	if dir == "" || nonce == "" || tok == "" {
		return fmt.Errorf("%s: give --once-dir, --nonce and the token", verifyArg)
	}
	return VerifyClaim(filepath.Clean(dir), tok, nonce, SqueueComments, time.Sleep, VerifyAfter, VerifyAgain)
}
