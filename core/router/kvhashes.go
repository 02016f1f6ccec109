package router

// PromptHashes returns the block size and the chained sequence and local
// block hashes of the prompt of the request the last Place call placed,
// valid until the next call (a held request offered again reuses both, as
// computed when it was first held). The replay hands them to the engine
// the request goes to (engine.Request Hashes, Locals), which then does not
// hash the same prompt again: that was 8 % of the instructions of the
// 5x-load kv_router replay (issue 34 item 2).
func (r *KV) PromptHashes() (blockSize int, hashes, locals []uint64) {
	return r.cfg.BlockSize, r.hashes, r.locals
}
