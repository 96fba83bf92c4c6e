// Package outlock keeps two commands from writing into one output folder
// at once (issue 34 §10; docs/metrics.md, "manifest.json"). A command
// takes the folder's lock before it computes anything, so the second of
// two runs into the same --out fails at once, naming the first, instead
// of racing it and leaving a folder whose files come from both.
//
// The lock is an advisory flock(2) on a file in the folder (.bursar.lock),
// held by an open descriptor: the kernel drops it whatever ends the
// process, so a killed run never leaves a folder locked. The file holds
// the holder's pid and command for the message, and is removed on
// release; a taker checks that the file it locked is still the one at the
// path, so that a release racing a take cannot let two hold it.
package outlock
