// Package kvevents publishes the KV-cache events of live-mode engine workers
// to KV-aware routers, in the wire format of vLLM's ZMQ KV-event publisher,
// and as JSON Server-Sent Events for browsers and scripts.
//
// A Hub numbers event batches and keeps the last Options.Retain of them so
// that a late or reconnecting consumer can replay what it missed. One batch
// holds one engine pass's events of one worker and one data-parallel rank.
//
// # Sequence numbers
//
// Batch sequence numbers start at 0, as in vLLM, and increase by one per
// batch across the whole hub, not per worker: the PUB stream, the replay
// socket and the SSE stream share one numbering, so a position in any of
// them is valid in the others. A consumer that subscribes to one worker's
// topic therefore sees gaps in the numbers (the other workers' batches); to
// detect loss it must subscribe to every worker ("kv@") or use SSE. A batch
// the PUB side had to drop rather than stall the simulation (see
// Counts.DroppedZMQ) also shows as a gap, which replay fills. kv.Event.ID is
// not sent: vLLM's format numbers batches, not events. ts is the pass's
// simulated time in seconds.
//
// # ZMQ
//
// The PUB socket sends each batch as three frames: the topic
// "kv@worker-<w>@<model>" (w the global worker index), the sequence number
// as 8 big-endian bytes, and the msgpack payload [ts, events, dp_rank]. ZMQ
// subscriptions are byte prefixes, so subscribe to "kv@worker-1@" (with the
// trailing "@") to get worker 1 without workers 10 to 19.
//
// Each event is, by default, a msgpack map with a "type" key, as vLLM #42892
// and Dynamo #13483 use:
//
//	{"type":"BlockStored","block_hashes":[...],"parent_block_hash":h|nil,
//	 "token_ids":[],"block_size":n,"lora_id":nil,"medium":"GPU",
//	 "lora_name":nil,"group_idx":0}
//	{"type":"BlockRemoved","block_hashes":[...],"medium":"GPU"}
//	{"type":"AllBlocksCleared"}
//
// With Options.Positional it is instead vLLM's older tagged array:
// ["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium],
// ["BlockRemoved", hashes, medium] or ["AllBlocksCleared"]. Block hashes are
// the simulator's 64-bit sequence hashes as msgpack unsigned integers.
// token_ids is always empty: the simulator keeps block hashes, not tokens,
// so a consumer must route on hashes. The medium is "GPU" for device memory
// and "CPU" for the pinned host tier (and "DISK" or "OBJECT" for the lower
// KVBM tiers, which vLLM has no names for).
//
// The replay ROUTER socket follows vLLM: a DEALER sends ["", start_seq]
// (start_seq as 8 big-endian bytes; a lone 8-byte frame is accepted too)
// and receives ["", seq, payload] for every retained batch with
// seq >= start_seq, then the end marker ["", 0xFFFFFFFFFFFFFFFF, ""].
// Replayed frames carry no topic, as in vLLM, where one endpoint serves one
// engine; since a hub serves many workers, a request may add a third frame,
// a topic prefix such as "kv@worker-1@", to replay only those batches.
// Replay fills the gap a new subscriber has before its subscription reaches
// the publisher (ZMQ's "slow joiner"): subscribe, note the first live seq,
// and replay from the last seq already seen.
//
// Peers of both sockets (tcp:// and ipc:// endpoints) pass a guard first
// (zmqguard.go, zmqconn.go): at most 64 connections per socket; the peer's
// ZMTP 3 greeting and READY within 10 s, run off zmq4's one-at-a-time
// accept loop so a silent peer delays no one; frames and messages of at
// most 64 KiB in at most 16 frames; on the PUB, anything but a
// subscription is dropped; a write stalled for 10 s drops the subscriber.
// A peer that breaks a bound loses its connection, nothing else.
//
// # SSE
//
// ServeHTTP streams each batch as an SSE event with the batch seq as its id
// and the JSON {"seq","ts","worker","dp_rank","events"} as its data; events
// carry the named-map fields. Hashes are exact decimal uint64s, which
// JavaScript's Number rounds above 2^53 (use a BigInt-aware parser).
package kvevents
