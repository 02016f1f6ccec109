package workload

// MaxTraceBytes bounds a trace file (1 GiB): the most the CLI reads (a
// trace of a few GB would be a mistake, not a workload) and so the most a
// trace written for it may hold (dynosim convert-trace checks a trace's
// size against it before writing), so every trace written reads back. The
// page and the Worker take less (their upload limits).
const MaxTraceBytes = 1 << 30
