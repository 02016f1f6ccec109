// Package config is the YAML configuration of a prediction (the
// AISimulate-style model of spec §9.2): strict (an unknown key is an error
// naming its path), with a documented default for every field, so "{}" is a
// valid config. One config type serves every front end.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/kv/tiers"
	"gopkg.in/yaml.v3"
)

// Config is the whole prediction config.
type Config struct {
	Traffic    Traffic    `yaml:"traffic" json:"traffic"`
	Engine     Engine     `yaml:"engine" json:"engine"`
	Router     Router     `yaml:"router" json:"router"`
	Planner    Planner    `yaml:"planner" json:"planner"`
	Evaluation Evaluation `yaml:"evaluation" json:"evaluation"`
	Execution  Execution  `yaml:"execution" json:"execution"`
}

// Traffic is the workload: where requests come from, how they arrive, when to stop.
type Traffic struct {
	Source Source `yaml:"source" json:"source"`
	Load   Load   `yaml:"load" json:"load"`
	Stop   Stop   `yaml:"stop" json:"stop"`
	// Warmup: requests run but left out of the report's figures (warmup.go).
	Warmup Warmup `yaml:"warmup" json:"warmup"`
}

// Source is the request source.
type Source struct {
	Type         string   `yaml:"type" json:"type"`                   // synthetic | trace
	Format       string   `yaml:"format" json:"format"`               // mooncake | azure
	Paths        []string `yaml:"paths" json:"paths"`                 // trace files
	BlockSize    int      `yaml:"block_size" json:"block_size"`       // tokens per trace hash id
	InputTokens  Tokens   `yaml:"input_tokens" json:"input_tokens"`   // synthetic: an integer or a distribution (tokens.go)
	OutputTokens Tokens   `yaml:"output_tokens" json:"output_tokens"` // synthetic
}

// Load is the arrival process.
type Load struct {
	Type        string  `yaml:"type" json:"type"` // trace_timestamps | concurrency | poisson | constant_rate
	Speedup     float64 `yaml:"speedup" json:"speedup"`
	Concurrency int     `yaml:"concurrency" json:"concurrency"`
	// RampUpSeconds starts the closed loop's clients evenly over this span
	// (concurrency only; 0: all at once).
	RampUpSeconds     float64 `yaml:"ramp_up_seconds" json:"ramp_up_seconds"`
	RequestsPerSecond float64 `yaml:"requests_per_second" json:"requests_per_second"`
	IntervalMs        float64 `yaml:"interval_ms" json:"interval_ms"`
	Seed              uint64  `yaml:"seed" json:"seed"`
}

// Stop bounds the run.
type Stop struct {
	Requests              int     `yaml:"requests" json:"requests"`
	MaxVirtualTimeSeconds float64 `yaml:"max_virtual_time_seconds" json:"max_virtual_time_seconds"`
}

// Engine is the serving engine and its workers.
type Engine struct {
	Mode     string `yaml:"mode" json:"mode"`         // aggregated | disaggregated
	Backend  string `yaml:"backend" json:"backend"`   // vllm | sglang | trtllm
	Model    string `yaml:"model" json:"model"`       // catalog name or HF config.json path
	Hardware string `yaml:"hardware" json:"hardware"` // catalog name
	// DType is the precision of weights and GEMMs: auto (the checkpoint's),
	// bf16, fp16, fp8 or fp4 (vLLM --quantization, TRT-LLM quant_algo).
	DType   string  `yaml:"dtype" json:"dtype"`
	Workers Workers `yaml:"workers" json:"workers"`
	// Semantics chooses between following the real engines (real, the
	// default) and reproducing the reference mocker exactly (mocker): see
	// ../shared/spec/README.md "Decisions". Under real, the attention-data
	// ranks of a dense model are independent engines (vLLM's dense data
	// parallelism); under mocker every DP worker steps its ranks in
	// lock-step, ending at the slowest rank (mocker.md).
	Semantics string `yaml:"semantics" json:"semantics"`
	// KVTransfer is the prefill→decode handoff (disaggregated mode only).
	KVTransfer KVTransfer `yaml:"kv_transfer" json:"kv_transfer"`

	Speculation Speculation `yaml:"speculation" json:"speculation"` // engines.go
}

// KVTransfer configures the prefill→decode KV handoff (spec §7).
type KVTransfer struct {
	// Handoff is the path: bootstrap (coordinated: the source holds its KV
	// until the destination reserved room and the transfer ended; vLLM
	// source-first, SGLang destination-first) or direct (prefill completes,
	// then decode is dispatched after the full-prompt delay).
	Handoff string `yaml:"handoff" json:"handoff"`
	// BytesPerToken is "auto" (the model's KV footprint in its KV dtype)
	// or a number.
	BytesPerToken string `yaml:"bytes_per_token" json:"bytes_per_token"`
	// BandwidthGBps is the per-request line rate in 10^9 bytes/s; null or
	// 0 disables the delay.
	BandwidthGBps *float64 `yaml:"bandwidth_gb_per_second" json:"bandwidth_gb_per_second"`
	// TimingMode: destination_missing charges the prompt blocks the
	// destination lacks, full_prompt the whole prompt (the direct path
	// always charges the full prompt).
	TimingMode string `yaml:"timing_mode" json:"timing_mode"`
}

// Workers holds one role per worker kind.
type Workers struct {
	Aggregated Role `yaml:"aggregated" json:"aggregated"`
	Prefill    Role `yaml:"prefill" json:"prefill"`
	Decode     Role `yaml:"decode" json:"decode"`
}

// Role configures the workers of one kind.
type Role struct {
	Hardware       string      `yaml:"hardware" json:"hardware"` // GPU catalog name; "" = engine.hardware
	Parallelism    Parallelism `yaml:"parallelism" json:"parallelism"`
	Scheduler      Scheduler   `yaml:"scheduler" json:"scheduler"`
	KVCache        KVCache     `yaml:"kv_cache" json:"kv_cache"`
	Timing         Timing      `yaml:"timing" json:"timing"`
	StartupSeconds float64     `yaml:"startup_seconds" json:"startup_seconds"`
	SGLang         SGLang      `yaml:"sglang" json:"sglang"` // backend sglang only (engines.go)
}

// Parallelism of one worker (GPUs per worker = tensor × pipeline × attention_data).
type Parallelism struct {
	Replicas      int `yaml:"replicas" json:"replicas"`
	Tensor        int `yaml:"tensor" json:"tensor"`
	Pipeline      int `yaml:"pipeline" json:"pipeline"`
	AttentionData int `yaml:"attention_data" json:"attention_data"`
	MoETensor     int `yaml:"moe_tensor" json:"moe_tensor"`
	MoEExpert     int `yaml:"moe_expert" json:"moe_expert"`
}

// Scheduler knobs.
type Scheduler struct {
	MaxBatchedTokens int    `yaml:"max_batched_tokens" json:"max_batched_tokens"` // 0: unbounded
	MaxSequences     int    `yaml:"max_sequences" json:"max_sequences"`           // 0: unbounded
	Preemption       string `yaml:"preemption" json:"preemption"`                 // lifo | fifo
	ChunkedPrefill   bool   `yaml:"chunked_prefill" json:"chunked_prefill"`
	MaxModelLen      int    `yaml:"max_model_len" json:"max_model_len"` // 0: none (vLLM only)
	// BatchWaitTimeoutIters and BatchWaitMaxTokensRatio are TensorRT-LLM's
	// batch_wait_timeout_iters and batch_wait_max_tokens_ratio: a context
	// batch waits up to that many passes while decodes run, unless its
	// tokens reach the ratio × max_batched_tokens (engine.BatchWait).
	// Backend trtllm only; 0 / 0: off.
	BatchWaitTimeoutIters   int     `yaml:"batch_wait_timeout_iters" json:"batch_wait_timeout_iters"`
	BatchWaitMaxTokensRatio float64 `yaml:"batch_wait_max_tokens_ratio" json:"batch_wait_max_tokens_ratio"`
	// AsyncScheduling: the engine plans its next pass while the current one
	// runs (vLLM --async-scheduling, SGLang's and TRT-LLM's overlap
	// schedulers), so a request reaching a busy worker joins the pass after
	// next. Aggregated mode only; off by default, as in the reference.
	AsyncScheduling bool `yaml:"async_scheduling" json:"async_scheduling"`
	// Policy is vLLM's --scheduling-policy: fcfs, or priority (the trace's
	// priority orders the waiting queue and the preemption victims, lower
	// first; engine.Config.PriorityScheduling). vLLM backend only.
	Policy string `yaml:"policy" json:"policy"`
	// EnableMixedChunk is SGLang's --enable-mixed-chunk: a prefill chunk
	// and the running batch's decode step share one forward. Off (SGLang's
	// default), a pass that can form a prefill batch runs it alone. Backend
	// sglang under engine.semantics real only (engines.go).
	EnableMixedChunk bool `yaml:"enable_mixed_chunk" json:"enable_mixed_chunk"`
}

// KVCache is the G1 cache.
type KVCache struct {
	BlockSize     int      `yaml:"block_size" json:"block_size"` // 0: backend default (vLLM 64, TRT-LLM 32, SGLang 1)
	PrefixCaching bool     `yaml:"prefix_caching" json:"prefix_caching"`
	G1Backend     string   `yaml:"g1_backend" json:"g1_backend"` // native | kvbm
	DType         string   `yaml:"dtype" json:"dtype"`           // auto (the model's) | bf16 | fp16 | fp8 (vLLM --kv-cache-dtype)
	Capacity      Capacity `yaml:"capacity" json:"capacity"`
	// Tiers are KVBM's lower tiers (g1_backend kvbm, vLLM/TensorRT-LLM).
	Tiers Tiers `yaml:"tiers" json:"tiers"`
}

// Tiers configures KVBM's G2 host, G3 disk and G4 object tiers (spec §5;
// defaults in kv/tiers.DefaultSettings). g2.blocks > 0 turns them on.
type Tiers struct {
	OffloadBatchBlocks int `yaml:"offload_batch_blocks" json:"offload_batch_blocks"` // 0: 32
	// Offload is when G1 blocks are copied to G2: on_store (write-through
	// as they are stored, as vLLM's offloading connector, LMCache and
	// Dynamo KVBM do), on_evict (when G1 evicts them; the slot waits for
	// the copy, mocker.md §5.4), or auto: on_store under engine.semantics
	// real, on_evict under mocker (spec README "Decisions").
	Offload string `yaml:"offload" json:"offload"`
	G2      Tier   `yaml:"g2" json:"g2"` // per worker
	G3      Tier   `yaml:"g3" json:"g3"` // shared by the role's workers
	G4      TierG4 `yaml:"g4" json:"g4"` // shared, unbounded
}

// Tier is a bounded lower tier: its capacity and its write (from the tier
// above) and read (towards G1) bandwidths in 10^9 bytes/s (0: instant).
type Tier struct {
	Blocks    int     `yaml:"blocks" json:"blocks"`
	WriteGBps float64 `yaml:"write_gb_per_second" json:"write_gb_per_second"`
	ReadGBps  float64 `yaml:"read_gb_per_second" json:"read_gb_per_second"`
}

// TierG4 is the object tier: on or off, no capacity.
type TierG4 struct {
	Enabled   bool    `yaml:"enabled" json:"enabled"`
	WriteGBps float64 `yaml:"write_gb_per_second" json:"write_gb_per_second"`
	ReadGBps  float64 `yaml:"read_gb_per_second" json:"read_gb_per_second"`
}

// Capacity sizes the G1 pool.
type Capacity struct {
	Type           string  `yaml:"type" json:"type"` // fixed | default; omitted: fixed if blocks or bytes is set, else default
	Blocks         int     `yaml:"blocks" json:"blocks"`
	Bytes          int64   `yaml:"bytes" json:"bytes"`
	MemoryFraction float64 `yaml:"memory_fraction" json:"memory_fraction"`
	// FractionUnset: Parse found no memory_fraction for the role, so an
	// engine with its own default (SGLang's mem_fraction_static under
	// engine.semantics real) uses that instead of MemoryFraction's 0.9.
	FractionUnset bool `yaml:"-" json:"-"`
}

// Timing selects the timing source.
type Timing struct {
	Type          string  `yaml:"type" json:"type"` // polynomial | fixed | profile | default; omitted: see Role.resolve
	Speedup       float64 `yaml:"speedup" json:"speedup"`
	DecodeSpeedup float64 `yaml:"decode_speedup" json:"decode_speedup"`
	PrefillMs     float64 `yaml:"prefill_ms" json:"prefill_ms"` // fixed
	DecodeMs      float64 `yaml:"decode_ms" json:"decode_ms"`   // fixed
	Path          string  `yaml:"path" json:"path"`             // profile .npz
	// Kernels prices type default's kernels from AIConfigurator's measured
	// tables ("aic", timing/kernels; the curves where no table covers a
	// shape; refused where AIC measured nothing of the GPU and engine) or
	// the fitted curves ("curves"). Omitted: the tables where AIC measured
	// the GPU under the engine, the curves elsewhere (issue 33 item 3).
	Kernels string `yaml:"kernels" json:"kernels,omitempty"`
}

// Router places requests on workers.
type Router struct {
	Policy             string  `yaml:"policy" json:"policy"` // round_robin | random | kv_router
	OverlapScoreCredit float64 `yaml:"overlap_score_credit" json:"overlap_score_credit"`
	PrefillLoadScale   float64 `yaml:"prefill_load_scale" json:"prefill_load_scale"`
	Temperature        float64 `yaml:"temperature" json:"temperature"`
	// HostCacheHitWeight and DiskCacheHitWeight credit, per block, a
	// prompt prefix a worker holds in its G2 (host) or G3 (disk) tier beyond
	// its G1 match, as Dynamo's KvRouterConfig host_cache_hit_weight and
	// disk_cache_hit_weight (mocker.md §8.7; defaults 0.75 and 0.25).
	HostCacheHitWeight float64          `yaml:"host_cache_hit_weight" json:"host_cache_hit_weight"`
	DiskCacheHitWeight float64          `yaml:"disk_cache_hit_weight" json:"disk_cache_hit_weight"`
	PrefillLoadModel   PrefillLoadModel `yaml:"prefill_load_model" json:"prefill_load_model"`
	KV                 KVRouter         `yaml:"kv" json:"kv"` // kv_router's other knobs
}

// PrefillLoadModel is how the KV router estimates prefill load.
type PrefillLoadModel struct {
	Type string `yaml:"type" json:"type"` // none | aic (prefill time from the run's timing model)
}

// KVRouter holds the KV router's knobs beyond AISimulate's top-level ones
// (Dynamo's KvRouterConfig names).
type KVRouter struct {
	OverlapScoreCreditDecay   float64     `yaml:"overlap_score_credit_decay" json:"overlap_score_credit_decay"`
	DecodeActiveRequestWeight float64     `yaml:"decode_active_request_weight" json:"decode_active_request_weight"`
	UseKVEvents               bool        `yaml:"use_kv_events" json:"use_kv_events"` // false: approximate mode
	TTLSeconds                float64     `yaml:"ttl_seconds" json:"ttl_seconds"`     // approximate mode
	Queue                     RouterQueue `yaml:"queue" json:"queue"`
}

// RouterQueue is the KV router's queue (Dynamo's router_queue_threshold and
// router_queue_policy).
type RouterQueue struct {
	Policy    string  `yaml:"policy" json:"policy"`       // fcfs | lcfs | wspt
	Threshold float64 `yaml:"threshold" json:"threshold"` // 0: no queue; else busy above threshold × max_batched_tokens of prefill
}

// Evaluation holds the SLA used for goodput.
type Evaluation struct {
	SLA SLA `yaml:"sla" json:"sla"`
}

// SLA bounds; 0 means unset.
type SLA struct {
	TTFTMs float64 `yaml:"ttft_ms" json:"ttft_ms"`
	ITLMs  float64 `yaml:"itl_ms" json:"itl_ms"`
	E2EMs  float64 `yaml:"e2e_ms" json:"e2e_ms"`
}

// Execution knobs.
type Execution struct {
	Seed uint64 `yaml:"seed" json:"seed"`
}

// Default returns the config "{}" stands for.
func Default() Config {
	role := func(seqs int) Role {
		return Role{
			Parallelism: Parallelism{Replicas: 1, Tensor: 1, Pipeline: 1, AttentionData: 1, MoETensor: 1, MoEExpert: 1},
			Scheduler:   Scheduler{MaxBatchedTokens: engine.DefaultMaxBatchedTokens, MaxSequences: seqs, Preemption: "lifo", Policy: "fcfs", ChunkedPrefill: true},
			KVCache:     KVCache{PrefixCaching: true, G1Backend: "native", DType: "auto", Capacity: Capacity{MemoryFraction: 0.9}, Tiers: defaultTiers()},
			Timing:      Timing{Speedup: 1, DecodeSpeedup: 1},
			SGLang:      DefaultSGLang(),
		}
	}
	return Config{
		Traffic: Traffic{
			Source: Source{Type: "synthetic", Format: "mooncake", BlockSize: 512, InputTokens: Tokens{N: 1024}, OutputTokens: Tokens{N: 128}},
			Load:   Load{Speedup: 1, Concurrency: 10, Seed: 42},
		},
		Engine: Engine{
			Mode: "aggregated", Backend: "vllm", Model: "llama-3.1-8b", Hardware: "h100_sxm", DType: "auto", Semantics: "real",
			Workers:     Workers{Aggregated: role(engine.DefaultMaxSeqs), Prefill: role(1), Decode: role(engine.DefaultMaxSeqs)},
			KVTransfer:  KVTransfer{Handoff: "bootstrap", BytesPerToken: "auto", TimingMode: "destination_missing"},
			Speculation: DefaultSpeculation(),
		},
		Router: Router{Policy: "round_robin", OverlapScoreCredit: 1, PrefillLoadScale: 1, HostCacheHitWeight: 0.75, DiskCacheHitWeight: 0.25,
			PrefillLoadModel: PrefillLoadModel{Type: "none"}, KV: KVRouter{UseKVEvents: true, TTLSeconds: 120, Queue: RouterQueue{Policy: "fcfs"}}},
		Planner:   DefaultPlanner(),
		Execution: Execution{Seed: 42},
	}
}

func defaultTiers() Tiers {
	d := tiers.DefaultSettings()
	return Tiers{
		OffloadBatchBlocks: d.BatchBlocks,
		Offload:            "auto",
		G2:                 Tier{WriteGBps: d.G1ToG2, ReadGBps: d.G2ToG1},
		G3:                 Tier{WriteGBps: d.G2ToG3, ReadGBps: d.G3ToG2},
		G4:                 TierG4{WriteGBps: d.G2ToG4, ReadGBps: d.G4ToG2},
	}
}

// WriteThrough reports whether the tiers offload on store under engine
// semantics (real | mocker): offload on_store, or auto under real.
func (t *Tiers) WriteThrough(semantics string) bool {
	return t.Offload == "on_store" || t.Offload == "auto" && semantics != "mocker"
}

// Settings are the tier knobs for kv/tiers (block size and bytes per
// token are the engine's and the model's).
func (t *Tiers) Settings(blockSize int, bytesPerToken float64) tiers.Settings {
	return tiers.Settings{
		BlockSize: blockSize, BytesPerToken: bytesPerToken, BatchBlocks: t.OffloadBatchBlocks,
		G2Blocks: t.G2.Blocks, G3Blocks: t.G3.Blocks, G4: t.G4.Enabled,
		G1ToG2: t.G2.WriteGBps, G2ToG1: t.G2.ReadGBps,
		G2ToG3: t.G3.WriteGBps, G3ToG2: t.G3.ReadGBps,
		G2ToG4: t.G4.WriteGBps, G4ToG2: t.G4.ReadGBps,
	}
}

// Parse reads a YAML config over the defaults, applies --set overrides
// (PATH=VALUE, left to right) and validates it. name labels errors.
func Parse(name string, data []byte, sets []string) (Config, error) {
	cfg := Default()
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
			return cfg, syntaxMsg(name, data, err)
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); err == nil {
			return cfg, fmt.Errorf("%s: more than one YAML document", name)
		}
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind == 0 || root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	for _, s := range sets {
		if err := applySet(root, s); err != nil {
			return cfg, err
		}
	}
	if err := check(name, root, reflect.TypeOf(cfg), ""); err != nil {
		return cfg, err
	}
	if err := root.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%s: %s", name, yamlMsg(err))
	}
	for i, r := range []*Role{&cfg.Engine.Workers.Aggregated, &cfg.Engine.Workers.Prefill, &cfg.Engine.Workers.Decode} {
		r.resolve()
		path := "engine.workers." + [...]string{"aggregated", "prefill", "decode"}[i] + ".kv_cache.capacity.memory_fraction"
		r.KVCache.Capacity.FractionUnset = keyNode(root, path) == nil
	}
	cfg.Planner.applyPreset(root) // explicit planner keys win over scaling_policy
	if err := modeKeys(name, root, cfg.Engine.Mode); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		path, _, _ := strings.Cut(err.Error(), ": ")
		if line := nodeLine(root, path); line > 0 {
			return cfg, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if fromSet(sets, path) {
			return cfg, fmt.Errorf("--set %w", err) // the command line's mistake, not the file's
		}
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// modeKeys rejects worker sections the mode does not use: aggregated
// workers in disaggregated mode, prefill/decode workers or kv_transfer in
// aggregated mode (spec §8.1: the two are mutually exclusive).
func modeKeys(name string, root *yaml.Node, mode string) error {
	unused := []string{"engine.workers.prefill", "engine.workers.decode", "engine.kv_transfer"}
	use := "engine.workers.aggregated"
	if mode == "disaggregated" {
		unused, use = []string{"engine.workers.aggregated"}, "engine.workers.prefill and engine.workers.decode"
	}
	for _, path := range unused {
		k := keyNode(root, path)
		if k == nil {
			continue
		}
		where := "--set " + path
		if k.Line > 0 {
			where = fmt.Sprintf("%s:%d: %s", name, k.Line, path)
		}
		return fmt.Errorf("%s: not used with engine.mode %s; configure %s", where, mode, use)
	}
	return nil
}

// keyNode is the key node of path ("a.b.c") in the YAML tree, nil if absent.
func keyNode(n *yaml.Node, path string) *yaml.Node {
	var key *yaml.Node
	for _, k := range strings.Split(path, ".") {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				key, next = n.Content[i], n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return key
}

// fromSet reports whether path was given, or is below a value given, by
// one of the --set overrides.
func fromSet(sets []string, path string) bool {
	for _, set := range sets {
		p, _, _ := strings.Cut(set, "=")
		if path == p || strings.HasPrefix(path, p+".") {
			return true
		}
	}
	return false
}

func unline(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		unline(c)
	}
}

// nodeLine is the line of the YAML key (or list item) at path
// ("a.b[2].c"), 0 when the path was not written (a default or a --set).
func nodeLine(n *yaml.Node, path string) int {
	line := 0
	for _, key := range strings.Split(path, ".") {
		key, idx, _ := strings.Cut(key, "[")
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil || line == 0 || next.Line == 0 {
			return 0 // not written, or given by a --set
		}
		n = next
		for idx != "" {
			var s string
			s, idx, _ = strings.Cut(idx, "[")
			i, err := strconv.Atoi(strings.TrimSuffix(s, "]"))
			if n.Kind == yaml.AliasNode {
				n = n.Alias
			}
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return 0
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return line
}

var lineRe = regexp.MustCompile(`^yaml: (?:unmarshal errors:\n\s*)?`)

func yamlMsg(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return strings.TrimSpace(te.Errors[0])
	}
	return strings.TrimSpace(lineRe.ReplaceAllString(err.Error(), ""))
}

// ApplySet sets PATH=VALUE (a --set) in the YAML tree root.
func ApplySet(root *yaml.Node, set string) error { return applySet(root, set) }

// applySet sets PATH=VALUE in the YAML tree, creating mappings on the way.
func applySet(root *yaml.Node, s string) error {
	path, val, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("--set %q: want PATH=VALUE", s)
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(val), &v); err != nil {
		return fmt.Errorf("--set %s: %s", path, yamlMsg(err))
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	if v.Kind == yaml.DocumentNode && len(v.Content) == 1 {
		value = v.Content[0]
		unline(value) // a --set value has no line in the file
	}
	n := root
	keys := strings.Split(path, ".")
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("--set %s: empty path element", path)
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("--set %s: %s is not a mapping", path, strings.Join(keys[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == k {
				next = n.Content[j+1]
				if i == len(keys)-1 {
					n.Content[j+1] = value
				}
			}
		}
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if i == len(keys)-1 {
				next = value
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, next)
		} else if next.Kind == yaml.ScalarNode && next.Tag == "!!null" && i < len(keys)-1 {
			*next = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		n = next
	}
	return nil
}
