package policy

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The class names, ranks and base prices of model.md §1 are what configs,
// journals and the credit accounting read.
func TestClassTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class Class
		rank  int
		price float64
	}{
		{"deadline", Deadline, 0, 4.0},
		{"interactive", Interactive, 1, 2.0},
		{"agent-burst", AgentBurst, 2, 3.0},
		{"opportunistic", Opportunistic, 3, 0.25},
	} {
		got, err := ParseClass(tc.name)
		require.NoError(t, err)
		require.Equal(t, tc.class, got)
		require.Equal(t, tc.rank, got.Rank())
		require.Equal(t, tc.price, got.BasePrice())
		require.Equal(t, tc.name, got.String())
		require.True(t, got.Valid())

		text, err := got.MarshalText()
		require.NoError(t, err)
		require.Equal(t, tc.name, string(text))
		var back Class
		require.NoError(t, back.UnmarshalText(text))
		require.Equal(t, tc.class, back)
	}
}

func TestParseClassRefusesOtherSpellings(t *testing.T) {
	for _, s := range []string{"", "Deadline", "agent_burst", "agentburst", " interactive", "opportunistic\n", "any", "class(2)"} {
		_, err := ParseClass(s)
		require.Error(t, err, "%q", s)
		// The message lists what would have been accepted.
		require.Contains(t, err.Error(), "agent-burst")
	}
	c := Interactive
	require.Error(t, c.UnmarshalText([]byte("burst")))
	require.Equal(t, Interactive, c, "a failed UnmarshalText leaves the value alone")
}

func TestClassOutsideTheTable(t *testing.T) {
	require.Equal(t, "any", AnyClass.String())
	require.False(t, AnyClass.Valid())
	require.Equal(t, "class(9)", Class(9).String())
	_, err := Class(9).MarshalText()
	require.Error(t, err)
	_, err = AnyClass.MarshalText()
	require.Error(t, err)
}

// An envelope travels as JSON (configs, the service API); its class is
// written by name.
func TestEnvelopeJSON(t *testing.T) {
	in := Envelope{Name: "adaptive-sci", Budget: 20000, Guaranteed: 64, Sustained: 128, BurstCeiling: 384,
		Bucket: 300000, Class: AgentBurst, IO: &Flow{Rate: 6, Bucket: 3600, Ceiling: 16}}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Contains(t, string(b), `"class":"agent-burst"`)
	require.NotContains(t, string(b), `"inference"`, "an unmetered dimension is left out")
	var out Envelope
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, out)

	err = json.Unmarshal([]byte(`{"name":"x","class":"bulk"}`), &out)
	require.ErrorContains(t, err, `unknown service class "bulk"`)
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig(1).Validate())
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{DefaultConfig(0), "pool must be at least 1 GPU, got 0"},
		{DefaultConfig(-5), "got -5"},
		{Config{Pool: 8, Grace: -1}, "grace must not be negative"},
		{Config{Pool: 8, IOCapacity: math.NaN()}, "io capacity"},
		{Config{Pool: 8, InferenceCapacity: -1}, "inference capacity"},
		{Config{Pool: 8, InferenceCapacity: math.Inf(1)}, "inference capacity"},
	} {
		require.ErrorContains(t, tc.cfg.Validate(), tc.want)
		_, err := New(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestRegisterRefusesInvalidEnvelopes(t *testing.T) {
	good := func() Envelope {
		e := env("c", 4, 8, 16, 100, AgentBurst)
		e.IO = &Flow{Rate: 1, Bucket: 2, Ceiling: 3}
		e.Inference = &Flow{Rate: 1, Bucket: 2, Ceiling: 3}
		return e
	}
	for _, tc := range []struct {
		name   string
		change func(*Envelope)
		want   string
	}{
		{"empty name", func(e *Envelope) { e.Name = "" }, "name must not be empty"},
		{"negative budget", func(e *Envelope) { e.Budget = -1 }, "budget must not be negative, got -1"},
		{"NaN budget", func(e *Envelope) { e.Budget = math.NaN() }, "budget must be a finite number"},
		{"negative guarantee", func(e *Envelope) { e.Guaranteed = -4 }, "guaranteed must not be negative"},
		{"NaN rate", func(e *Envelope) { e.Sustained = math.NaN() }, "sustained must be a finite number"},
		{"negative rate", func(e *Envelope) { e.Sustained = -0.5 }, "sustained must not be negative"},
		{"infinite bucket", func(e *Envelope) { e.Bucket = math.Inf(1) }, "bucket must be a finite number"},
		{"negative burst", func(e *Envelope) { e.BurstCeiling = -1 }, "burst_ceiling must not be negative"},
		{"burst below guarantee", func(e *Envelope) { e.BurstCeiling = 3 }, "burst_ceiling (3) must not be below guaranteed (4)"},
		{"unknown class", func(e *Envelope) { e.Class = Class(7) }, "unknown service class 7"},
		{"any class", func(e *Envelope) { e.Class = AnyClass }, "unknown service class 255"},
		{"negative io rate", func(e *Envelope) { e.IO.Rate = -1 }, "io.rate must not be negative"},
		{"NaN io ceiling", func(e *Envelope) { e.IO.Ceiling = math.NaN() }, "io.ceiling must be a finite number"},
		{"infinite inference bucket", func(e *Envelope) { e.Inference.Bucket = math.Inf(-1) }, "inference.bucket must be a finite number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, j := newBroker(t, 100)
			e := good()
			require.NoError(t, e.Validate())
			tc.change(&e)
			_, err := b.Register(e)
			require.ErrorIs(t, err, ErrInvalidEnvelope)
			require.ErrorContains(t, err, tc.want)
			require.Zero(t, b.NumCampaigns(), "nothing registered")
			require.Empty(t, j.events, "nothing journaled")
		})
	}
}

func TestRegisterRefusesDuplicateName(t *testing.T) {
	b, j := newBroker(t, 100)
	mustRegister(t, b, env("victim", 10, 10, 10, 100, Interactive))
	_, err := b.Register(env("victim", 0, 1, 1, 1, AgentBurst))
	require.ErrorIs(t, err, ErrInvalidEnvelope)
	require.ErrorContains(t, err, "victim")
	require.Equal(t, 1, b.NumCampaigns())
	require.Len(t, j.events, 1)
}

// The sum of guarantees may reach the pool but never exceed it; the refusal
// names both numbers and changes nothing.
func TestRegisterRefusesOverbooking(t *testing.T) {
	b, j := newBroker(t, 100)
	mustRegister(t, b, env("a", 60, 60, 60, 1, AgentBurst))
	mustRegister(t, b, env("b", 40, 40, 40, 1, AgentBurst)) // exactly the pool
	_, err := b.Register(env("c", 1, 1, 1, 1, AgentBurst))
	require.ErrorIs(t, err, ErrOverbooked)
	require.ErrorContains(t, err, "101")
	require.ErrorContains(t, err, "100")
	require.ErrorContains(t, err, "campaign c")

	_, err = b.Register(env("d", 400, 400, 400, 1, AgentBurst))
	require.ErrorIs(t, err, ErrOverbooked)
	require.ErrorContains(t, err, "guarantees would sum to 500 GPUs on a pool of 100")
	require.Equal(t, 2, b.NumCampaigns())
	require.Len(t, j.of(EventRegister), 2)

	// A campaign with no guarantee still fits.
	mustRegister(t, b, env("e", 0, 1, 1, 1, Opportunistic))
}

// Register starts every bucket full and the credits at the budget, and
// journals the envelope.
func TestRegisterStartsFull(t *testing.T) {
	b, j := newBroker(t, 512)
	e := env("adaptive-sci", 64, 128, 384, 300000, AgentBurst)
	e.Budget = 20000
	e.IO = &Flow{Rate: 6, Bucket: 3600, Ceiling: 16}
	c := mustRegister(t, b, e)
	require.Equal(t, CampaignID(0), c)
	require.Equal(t, 300000.0, b.Tokens(c))
	require.Equal(t, 20000.0, b.Credits(c))
	require.Zero(t, b.Spent(c))
	require.Equal(t, 3600.0, b.FlowTokens(c, IO))
	require.Equal(t, Unmetered, b.FlowTokens(c, Inference), "an absent dimension is unmetered")
	require.Equal(t, e, b.Envelope(c))
	got, ok := b.Lookup("adaptive-sci")
	require.True(t, ok)
	require.Equal(t, c, got)
	_, ok = b.Lookup("naive-sci")
	require.False(t, ok)

	require.Equal(t, []string{
		`{"t": 0, "event": "register", "campaign": "adaptive-sci", "guaranteed": 64, "R": 128, "B": 300000, "burst": 384}`,
	}, j.lines())
}

func TestUnknownCampaign(t *testing.T) {
	b, _ := newBroker(t, 10)
	_, err := b.Request(0, 1, 1, AnyClass)
	require.ErrorIs(t, err, ErrUnknownCampaign)
	require.ErrorIs(t, b.ReleaseAll(-1, AnyClass), ErrUnknownCampaign)
	require.ErrorIs(t, b.ReleaseLease(3, 1), ErrUnknownCampaign)
	_, _, err = b.Consume(0, 1, 1)
	require.ErrorIs(t, err, ErrUnknownCampaign)
	require.False(t, errors.Is(err, ErrInvalidEnvelope))
}
