package deploy

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// routerMode is dynamo.frontend's --router-mode for router.policy.
func (p *plan) routerMode() string {
	switch p.cfg.Router.Policy {
	case "kv_router":
		return "kv"
	case "random":
		return "random"
	}
	return "round-robin"
}

// frontendArgs are python -m dynamo.frontend's router arguments; envs are
// the same settings as the frontend's environment variables (the DGD's form).
func (p *plan) frontendArgs() (args []string, envs [][2]string) {
	mode := p.routerMode()
	args = []string{"--router-mode", mode}
	envs = [][2]string{{"DYN_ROUTER_MODE", mode}}
	if mode != "kv" {
		return args, envs
	}
	r := &p.cfg.Router
	args = append(args, "--kv-overlap-score-weight", ftoa(r.OverlapScoreCredit), "--router-temperature", ftoa(r.Temperature))
	envs = append(envs, [2]string{"DYN_KV_OVERLAP_SCORE_WEIGHT", ftoa(r.OverlapScoreCredit)}, [2]string{"DYN_ROUTER_TEMPERATURE", ftoa(r.Temperature)})
	if !r.KV.UseKVEvents {
		args = append(args, "--no-kv-events", "--router-ttl", ftoa(r.KV.TTLSeconds))
		envs = append(envs, [2]string{"DYN_KV_EVENTS", "false"}, [2]string{"DYN_ROUTER_TTL", ftoa(r.KV.TTLSeconds)})
	}
	return args, envs
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./:=,+@%-]+$`)

// quote makes s one shell word; a double-quoted "$..." word stays expandable.
func quote(s string) string {
	if plainArg.MatchString(s) || strings.HasPrefix(s, `"$`) && strings.HasSuffix(s, `"`) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// command writes env... cmd args... & as one backgrounded shell command,
// one flag per line.
func command(b *bytes.Buffer, indent string, env []string, cmd []string, args []string) {
	b.WriteString(indent)
	for _, e := range env {
		b.WriteString(e + " ")
	}
	b.WriteString(strings.Join(cmd, " "))
	for i := 0; i < len(args); i++ {
		b.WriteString(" \\\n" + indent + "    " + quote(args[i]))
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			b.WriteString(" " + quote(args[i]))
		}
	}
	b.WriteString(" &\n")
}

// slot is one worker replica placed on a node's GPUs.
type slot struct {
	w          worker
	replica    int
	node       int
	first, gpu int // first device on the node, GPUs
	hostIndex  int // index among the node's workers (for per-host ports)
}

// place packs the replicas onto GPUsPerNode-GPU nodes in order (prefill
// before decode), a replica never straddling two nodes.
func (p *plan) place() []slot {
	var out []slot
	node, used, idx := 0, 0, 0
	for _, w := range p.workers {
		for r := 0; r < w.r.Parallelism.Replicas; r++ {
			if used+w.gpus > GPUsPerNode {
				node, used, idx = node+1, 0, 0
			}
			out = append(out, slot{w: w, replica: r, node: node, first: used, gpu: w.gpus, hostIndex: idx})
			used += w.gpus
			idx++
		}
	}
	return out
}

func devices(first, n int) string {
	d := make([]string, n)
	for i := range d {
		d[i] = itoa(first + i)
	}
	return strings.Join(d, ",")
}

// launch renders launch.sh.
func (p *plan) launch() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("#!/usr/bin/env bash\n")
	for _, h := range p.header() {
		b.WriteString("# " + h + "\n")
	}
	slots := p.place()
	nodes := slots[len(slots)-1].node + 1
	b.WriteString(`#
# Usage: [MODEL=...] [NODE=k] [STACK=dynamo|standalone] ./launch.sh
#   STACK=dynamo (default): the Dynamo frontend (router) on node 0 and python -m
#   dynamo.<backend> workers, as ai-dynamo/dynamo examples/backends/*/launch/*.sh;
#   needs etcd and NATS reachable (ETCD_ENDPOINTS, NATS_SERVER), as upstream.
#   STACK=standalone: the engine's own server per replica on ports HTTP_PORT+1...,
#   no router (aggregated only).
`)
	fmt.Fprintf(&b, "#   %d node(s) of %d GPUs: run with NODE=0 ... NODE=%d, one per node.\n", nodes, GPUsPerNode, nodes-1)
	b.WriteString("set -euo pipefail\n")
	fmt.Fprintf(&b, "MODEL=\"${MODEL:-%s}\"\n", p.model)
	b.WriteString("NODE=\"${NODE:-0}\"\nSTACK=\"${STACK:-dynamo}\"\nHTTP_PORT=\"${HTTP_PORT:-8000}\"\n")
	b.WriteString("export PYTHONHASHSEED=0 # deterministic KV event hashes (upstream's launch scripts)\n")
	b.WriteString("trap 'kill 0' EXIT\n\n")

	b.WriteString("if [ \"$STACK\" = dynamo ]; then\n")
	fa, _ := p.frontendArgs()
	b.WriteString("  if [ \"$NODE\" = 0 ]; then\n")
	command(&b, "    ", nil, []string{"python3", "-m", "dynamo.frontend"}, append([]string{"--http-port", `"$HTTP_PORT"`}, fa...))
	b.WriteString("  fi\n")
	for n := 0; n < nodes; n++ {
		fmt.Fprintf(&b, "  if [ \"$NODE\" = %d ]; then\n", n)
		for _, s := range slots {
			if s.node != n {
				continue
			}
			fmt.Fprintf(&b, "    # %s worker %d: %d GPU(s)\n", s.w.role, s.replica, s.gpu)
			env := []string{"CUDA_VISIBLE_DEVICES=" + devices(s.first, s.gpu)}
			args := append([]string{p.modelFlag(), `"$MODEL"`}, p.dynamoArgs(s.w)...)
			switch p.backend {
			case "vllm":
				if s.w.role != "aggregated" {
					env = append(env, fmt.Sprintf("VLLM_NIXL_SIDE_CHANNEL_PORT=%d", 20097+s.hostIndex))
				}
				if p.routerMode() == "kv" {
					args = append(args, "--kv-events-config", fmt.Sprintf(`{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:%d"}`, 5557+s.hostIndex))
				}
				if s.w.r.Parallelism.AttentionData > 1 {
					args = append(args, "--data-parallel-rpc-port", itoa(29550+10*s.hostIndex))
				}
			case "sglang":
				if s.w.role == "prefill" {
					args = append(args, "--disaggregation-bootstrap-port", itoa(12345+s.hostIndex))
				}
			}
			command(&b, "    ", env, []string{"python3", "-m", "dynamo." + p.backend}, args)
		}
		b.WriteString("  fi\n")
	}
	b.WriteString("else\n")
	if p.workers[0].role != "aggregated" {
		b.WriteString("  echo \"STACK=standalone serves aggregated deployments only; use STACK=dynamo\" >&2\n  exit 1\n")
	} else {
		p.standalone(&b, slots, nodes)
	}
	b.WriteString("fi\nwait\n")
	return b.Bytes(), nil
}

// standalone writes the engines' own servers, one per replica.
func (p *plan) standalone(b *bytes.Buffer, slots []slot, nodes int) {
	if p.backend == "trtllm" {
		b.WriteString("  TRTLLM_OPTIONS=\"$(mktemp)\"\n  cat >\"$TRTLLM_OPTIONS\" <<'EOF'\n" + p.trtllmOptions(slots[0].w) + "\nEOF\n")
	}
	for n := 0; n < nodes; n++ {
		fmt.Fprintf(b, "  if [ \"$NODE\" = %d ]; then\n", n)
		for _, s := range slots {
			if s.node != n {
				continue
			}
			env := []string{"CUDA_VISIBLE_DEVICES=" + devices(s.first, s.gpu)}
			port := fmt.Sprintf(`"$((HTTP_PORT + %d))"`, s.hostIndex+1)
			fmt.Fprintf(b, "    # replica %d: %d GPU(s), port %s\n", s.replica, s.gpu, port)
			switch p.backend {
			case "vllm":
				command(b, "    ", env, []string{"vllm", "serve", `"$MODEL"`}, append(p.vllmArgs(s.w), "--port", port))
			case "sglang":
				command(b, "    ", env, []string{"python3", "-m", "sglang.launch_server"},
					append(append([]string{"--model-path", `"$MODEL"`}, p.sglangArgs(s.w)...), "--port", port))
			case "trtllm":
				command(b, "    ", env, []string{"trtllm-serve", `"$MODEL"`},
					append(p.trtllmServeArgs(s.w), "--extra_llm_api_options", `"$TRTLLM_OPTIONS"`, "--port", port))
			}
		}
		b.WriteString("  fi\n")
	}
}
