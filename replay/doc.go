// Package replay writes the interactive single-run report, report.html: one
// self-contained page (data, style and script inline, nothing fetched) that
// replays a run's sampled series and grant log on canvas charts, with a play
// head, a per-campaign readout at the cursor, a narrative written from the
// run's measured numbers, and the run's knobs.
//
// The page follows the run's cast: one series, legend entry and readout row
// per display group (engine.Result.Groups, the probe included), coloured by
// agent kind (GroupColors). The paper's cast keeps the prototype's five
// groups and wording; another cast gets a narrative that names its
// campaigns (docs/scenarios.md).
//
// The page is rendered with html/template from an embedded template, so
// every value that reaches it (campaign names included) is escaped for the
// context it lands in. Its colours come from this package's palette, which
// the static figures can share.
package replay
