// Package fifo is first come, first served with EASY backfilling
// (docs/studies.md §2, §2.1): the default core of batch schedulers.
//
// Rule. The queue is the pending requests in submit order (ties by request
// id). Each tick, after expiry: (3) while the head fits, start it; (4) one
// EASY pass — the head's reservation (shadow time s, extra GPUs x) from
// the running leases' estimated ends, then every later request that fits
// now and ends by s, or fits in x (x shrinking by its size), starts. A
// lease's estimated end is its expiry (its preemption time under notice):
// an agent's requested duration is its estimate. The pass is policy/easy's;
// the adaptation (partial grants of the head, §6.1; reservations, §6.6;
// the filler, §6.2) is policy/baseline's AdmitEASY, or on a trace's queue
// AdmitEASYWaiting over the queue kept between passes, which decides the
// same without reading the whole queue at every pass (docs/traces.md,
// "Work per job").
//
// Nothing but the filler is ever preempted: FCFS has no notion of one job
// mattering more than another. Source: Lifka, "The ANL/IBM SP scheduling
// system" (JSSPP 1995), and Mu'alem & Feitelson, IEEE TPDS 12(6), 2001,
// for EASY as specified in docs/studies.md §2.1.
package fifo
