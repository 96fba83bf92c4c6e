// Package slurmtoken owns Bursar's Slurm lease tokens (issue 23,
// docs/slurm.md): the signed string that carries a lease into Slurm as a
// job's --comment, its check for slurmctld's job_submit/lua plugin, and
// the WcKey the plugin gives the job. It is small on purpose: the plugin
// runs the check once per submission inside slurmctld, with slurmctld's
// job lock held, so the binary that runs it (cmd/bursar-slurm-check, or
// `bursar slurm check`) should start fast; this package imports nothing
// beyond the standard library's crypto and text.
//
// A token is prefix:lease:campaign:gpus:expires:user:account:mac, where
// lease is the campaign's own lease id, expires the lease's wall-clock end
// in unix seconds, user the Unix user and account the Slurm account it
// was issued for (issue 35: a token worked for any user, and alice ran on
// bob's lease), and mac the HMAC-SHA256 of the rest under a key the
// service and the plugin's host share.
package slurmtoken

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every token (its version: bursar1 tokens named no user
// or account, and the gate refuses them).
const Prefix = "bursar2"

// MinKeyBytes is the shortest key accepted.
const MinKeyBytes = 32

// Lease is what a token says.
type Lease struct {
	Lease    int
	Campaign string
	GPUs     int
	// Expires is the wall-clock end of the lease, unix seconds.
	Expires int64
	// User is the Unix user the token was issued for: the gate admits
	// only that user's jobs on it ("" names none, and the gate refuses
	// the token).
	User string
	// Account is the Slurm account the token's jobs run under ("": the
	// campaign's, Account(Campaign)).
	Account string
}

// SlurmAccount is the account l's jobs run under: Account, or the
// campaign's.
func (l Lease) SlurmAccount() string {
	if l.Account != "" {
		return strings.ToLower(l.Account)
	}
	return Account(l.Campaign)
}

// tokenRE matches a token: prefix, lease, campaign, GPUs, expiry, user,
// account, 64 hex digits of MAC. Nothing in it needs quoting in a shell
// word.
var tokenRE = regexp.MustCompile(`^` + Prefix + `:([0-9]{1,10}):([A-Za-z0-9][A-Za-z0-9._-]{0,63}):([0-9]{1,6}):([0-9]{1,12}):` +
	`((?:` + userPattern + `)?):((?:` + accountPattern + `)?):([0-9a-f]{64})$`)

// The names a token may hold: a Unix user (POSIX's portable names, and
// the letters systemd allows) and a Slurm account; UserRE and AccountRE
// match them whole.
const (
	userPattern    = `[A-Za-z0-9_][A-Za-z0-9._-]{0,63}`
	accountPattern = `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`
)

// UserRE and AccountRE match a user and an account a token may name.
var (
	UserRE    = regexp.MustCompile(`^` + userPattern + `$`)
	AccountRE = regexp.MustCompile(`^` + accountPattern + `$`)
)

func (l Lease) payload() string {
	return fmt.Sprintf("%s:%d:%s:%d:%d:%s:%s", Prefix, l.Lease, l.Campaign, l.GPUs, l.Expires, l.User, l.Account)
}

func mac(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns the token for l under key.
func Sign(key []byte, l Lease) string {
	p := l.payload()
	return p + ":" + mac(key, p)
}

// Errors of Verify.
var (
	ErrMalformed = errors.New("not a Bursar lease token")
	ErrForged    = errors.New("the lease token's signature does not match (forged, altered, or another key)")
	ErrExpired   = errors.New("the lease token has expired")
)

// Verify checks tok's form and signature under key and that it has not
// expired at now. An expired token's lease is returned with ErrExpired.
func Verify(key []byte, tok string, now time.Time) (Lease, error) {
	l, m, err := parse(tok)
	if err != nil {
		return Lease{}, err
	}
	if !hmac.Equal([]byte(mac(key, l.payload())), []byte(m)) {
		return Lease{}, ErrForged
	}
	if now.Unix() >= l.Expires {
		return l, ErrExpired
	}
	return l, nil
}

// Parse reads what a token says without checking its signature: for the
// lease wrapper, which holds no key and needs the lease's WcKey (the gate
// checks the signature).
func Parse(tok string) (Lease, error) {
	l, _, err := parse(tok)
	return l, err
}

func parse(tok string) (Lease, string, error) {
	m := tokenRE.FindStringSubmatch(strings.TrimSpace(tok))
	if m == nil {
		return Lease{}, "", ErrMalformed
	}
	var l Lease
	var err error
	l.Campaign, l.User, l.Account = m[2], m[5], m[6]
	if l.Lease, err = strconv.Atoi(m[1]); err != nil {
		return Lease{}, "", ErrMalformed
	}
	if l.GPUs, err = strconv.Atoi(m[3]); err != nil {
		return Lease{}, "", ErrMalformed
	}
	if l.Expires, err = strconv.ParseInt(m[4], 10, 64); err != nil {
		return Lease{}, "", ErrMalformed
	}
	return l, m[7], nil
}

// Account is the Slurm account a campaign's jobs run under: its name in
// lower case (Slurm folds account names to lower case).
func Account(campaign string) string { return strings.ToLower(campaign) }

// WCKey is the WcKey the gate gives a job on lease l
// (scripts/slurm/job_submit.lua), as Slurm keeps it: in lower case. It is
// the lease's name in Slurm's records (bursar slurm reconcile reads it),
// and `scancel --wckey` signals every job of the lease in one call, with
// no squeue to find them first.
func WCKey(l Lease) string {
	return strings.ToLower(fmt.Sprintf("bursar:%d:%s:%d:%d", l.Lease, l.Campaign, l.GPUs, l.Expires))
}

// ReadKey reads a key file. Surrounding white space is not part of the
// key, so that a key file written with echo works in both places.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("%s: the key must be at least %d bytes long, got %d", path, MinKeyBytes, len(b))
	}
	return b, nil
}

// SubmitSlack is how late after its lease's grant a job may reach the
// gate and still get the lease's whole minutes as its time limit
// (LimitMinutes): the wrapper asks for the token and submits within a
// second or two of the grant, and a 10-minute lease submitted 0.3 s
// after it would otherwise get 9.
const SubmitSlack = 5

// LimitMinutes is the time limit, in Slurm's whole minutes, that the gate
// gives a job on lease l submitted at now: floor((expiry − now +
// SubmitSlack) / 60), so that Slurm's own limit ends at most SubmitSlack
// seconds after the lease, and with no Bursar process left Slurm ends the
// job within the backstop docs/slurm.md states (issue 35: a job ran 86 s
// past a 20 s lease under a limit rounded up to a minute). Below 1 the
// job is refused: Slurm counts no shorter limit (0 ends the job at its
// next limit check, at any point of the first ~30 s).
func LimitMinutes(l Lease, now time.Time) int64 {
	return (l.Expires - now.Unix() + SubmitSlack) / 60
}

// Check is the plugin's question: the line it parses, and whether the
// token admits a job. A valid token gives
//
//	ok LEASE CAMPAIGN GPUS SECONDS_LEFT ACCOUNT EXPIRES MINUTES
//
// (MINUTES: LimitMinutes, the job's time limit)
// and anything else "refuse: REASON", the reason the user is shown. With
// onceDir (not "") a token admits one job only (Claim). With job (not
// nil) the job must fit the lease (Job.Fits), checked before the token
// is spent: a job refused for its size or account leaves the token for a
// corrected one.
func Check(keyFile, tok, onceDir string, job *Job, now time.Time) (line string, ok bool) {
	return check(keyFile, tok, onceDir, job, now, nil)
}

// check is Check; with verify (not nil) a claim gets a verifier
// (verify.go), started with the claim's folder, the token and its nonce.
func check(keyFile, tok, onceDir string, job *Job, now time.Time, verify func(dir, tok, nonce string) error) (line string, ok bool) {
	key, err := ReadKey(keyFile)
	if err != nil {
		return "refuse: " + err.Error(), false
	}
	l, err := Verify(key, tok, now)
	switch {
	case err != nil && l.Lease > 0:
		return fmt.Sprintf("refuse: lease %d of campaign %s: %v", l.Lease, l.Campaign, err), false
	case err != nil:
		return "refuse: " + err.Error(), false
	}
	if job != nil {
		if err := job.Fits(l); err != nil {
			return "refuse: " + err.Error(), false
		}
	}
	minutes := LimitMinutes(l, now)
	if minutes < 1 {
		return fmt.Sprintf("refuse: lease %d of campaign %s has %d s left, under the whole minute Slurm's time limits count "+
			"(ask for a new lease: bursar lease --slurm leases last whole minutes)", l.Lease, l.Campaign, l.Expires-now.Unix()), false
	}
	if onceDir != "" {
		nonce := newNonce()
		if err := claim(onceDir, l, now, nonce); err != nil {
			return "refuse: " + err.Error(), false
		}
		if verify != nil {
			// Without a verifier the token stays spent if slurmctld
			// refuses the job after the plugin: the job is admitted all
			// the same.
			_ = verify(onceDir, strings.TrimSpace(tok), nonce)
		}
	}
	return fmt.Sprintf("ok %d %s %d %d %s %d %d", l.Lease, l.Campaign, l.GPUs, l.Expires-now.Unix(), l.SlurmAccount(), l.Expires, minutes), true
}

// ErrUsed is Claim's answer for a token that admitted a job already, and
// ErrReleased for the token of a lease released since (MarkReleased).
var (
	ErrUsed     = errors.New("one lease token admits one job")
	ErrReleased = errors.New("a released lease's token admits no job")
)

// releasedMark starts the record of a released lease's token.
const releasedMark = "released"

// claimPath is the record of lease l's token in dir: named by the
// lease (its expiry, campaign and id: a token's identity, since the
// signature covers exactly those and the size).
func claimPath(dir string, l Lease) string {
	return filepath.Join(dir, fmt.Sprintf("%d.%s.%d", l.Expires, Account(l.Campaign), l.Lease))
}

// MarkReleased records in dir (the gate's ONCE_DIR) that lease l was
// released: its token is then spent, and Claim refuses it with
// ErrReleased, in the same one file operation that spends a token
// (issue 35: a released lease's token admitted a job that ran on CPUs
// the broker had freed). The record replaces a claim, and is swept with
// the claims once the lease is over.
func MarkReleased(dir string, l Lease) error {
	return os.WriteFile(claimPath(dir, l), []byte(releasedMark+"\n"), 0o600)
}

// Claim records in dir that lease l admitted a job, and refuses when it
// has already: one token, one job (issue 23). The record is a file named
// by the lease (its expiry, campaign and id: a token's identity, since
// the signature covers exactly those and the size), created exclusively,
// so that two submissions racing on one token cannot both win. Records
// of leases over for a minute are removed as new ones are made, so the
// folder holds about as many files as there are live leases. dir must be
// writable by SlurmUser only (docs/slurm.md).
func Claim(dir string, l Lease, now time.Time) error { return claim(dir, l, now, newNonce()) }

// claim is Claim, the record holding nonce (VerifyClaim removes only the claim
// with its own nonce).
func claim(dir string, l Lease, now time.Time, nonce string) error {
	path := claimPath(dir, l)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, os.ErrExist):
		// Only a refusal reads the record, to say why.
		if b, _ := os.ReadFile(path); strings.HasPrefix(string(b), releasedMark) {
			return fmt.Errorf("lease %d of campaign %s was released: %w (ask for another lease)", l.Lease, l.Campaign, ErrReleased)
		}
		return fmt.Errorf("lease %d of campaign %s admitted a job already: %w (ask for another lease)", l.Lease, l.Campaign, ErrUsed)
	case err != nil:
		return fmt.Errorf("cannot record the lease's job (%v): refused, since the token could otherwise be used again", err)
	}
	_, werr := f.WriteString(claimMark + nonce + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("cannot record the lease's job (%v): refused, since the token could otherwise be used again", err)
	}
	sweep(dir, now)
	return nil
}

// sweep removes the records of leases that ended over a minute ago: their
// tokens are refused as expired anyway.
func sweep(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		exp, _, ok := strings.Cut(e.Name(), ".")
		if !ok {
			continue
		}
		if t, err := strconv.ParseInt(exp, 10, 64); err == nil && t < now.Unix()-60 {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
