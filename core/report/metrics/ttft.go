package metrics

// Part is one part of the TTFT breakdown (report.ttft_breakdown).
type Part struct{ Key, Label, Help string }

// TTFTParts are the parts of the TTFT breakdown in the order they happen;
// onboarding exists only in runs with lower tiers, the three transfer
// parts only in disaggregated runs. The report
// cuts each request's TTFT into exactly these (core/report/breakdown.go),
// and the page's bars and glossary show their labels and texts.
var TTFTParts = []Part{
	{"frontend", "Frontend", "From a request's arrival until the router sees it: the serving frontend's latency (HTTP, tokenization)."},
	{"router_queue", "Router queue", "Time the router held the request before placing it on a worker (a queueing router policy, or every worker busy)."},
	{"engine_queue", "Engine queue", "From placement until the start of the engine pass that first admits the request: waiting for KV blocks or a batch slot, and for the pass after next under async scheduling."},
	{"onboarding", "Onboarding", "Runs with KVBM lower tiers: from the pass that began bringing the request's cached prefix back from G2/G3/G4 (the request parks, its G1 slots reserved) until its first admission."},
	{"preemption", "Preemption", "From the first admission to the last re-admission before the first token: work a preemption (or retraction) threw away, and the wait to be admitted again."},
	{"prefill", "Prefill", "Computing the prompt, in chunks with chunked prefill: from the admission that stuck to the pass that emits the first token (aggregated), or to the end of the prefill worker's work (disaggregated)."},
	{"kv_transfer_wait", "KV transfer wait", "Disaggregated: from the end of prefill until the KV transfer starts, waiting for the decode side to reserve room for the request's KV."},
	{"kv_transfer", "KV transfer", "Disaggregated: moving the prompt's KV from the prefill worker to the decode worker."},
	{"decode_queue", "Decode queue", "Disaggregated: from the end of the KV transfer until the decode pass that emits the first token starts."},
	{"first_token_pass", "First-token pass", "The engine pass that emits the first token (its duration)."},
}

// ttftTerms are the glossary's entries for the parts.
func ttftTerms() []Term {
	out := make([]Term, len(TTFTParts))
	for i, p := range TTFTParts {
		out[i] = Term{"TTFT: " + p.Label, p.Help}
	}
	return out
}
