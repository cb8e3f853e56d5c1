#!/usr/bin/env bash
# GPU validation on a machine with a GPU and the CUDA toolkit but
# no Go toolchain. `make gpu-carry` builds, here, what it runs into
# gpucarry/ (xz-compressed: the gostachio binary and the test binaries of
# kernels/cuda, engine/gpu and engine); carry that folder to the GPU
# machine with the working tree and run this script from the repository
# root there. It writes to $OUT (default out/gpu-validate):
#   ptx.tgz        kernels/cuda/ptx rebuilt by `make ptx` (check it in)
#   log.txt        every step's output
#   gpubench.json  gostachio gpu bench at SF1
#   torch.json     the PyTorch peer at SF1 (SKIP_TORCH=1: not run)
#   profile/       calibrate --micro --gpu 0: the GPU backend's profile and samples
#                  (PROFILE_NAME: its name; default gpu-calibrated)
#   validate/      validate --gpu 0 of Q1 and Q6 with it (results.csv, figure, report);
#                  validate2/ a second one (another seed's order of the runs)
#   sf10/          SF10=1: Q1 and Q6 at SF10 on the GPU, the CPU engine and PyTorch
#   hybrid/        all 22 queries as hybrid GPU runs (--gpu-hybrid: the scan
#                  pipelines the GPU path cannot run on the host) and on the
#                  CPU engine, alternated, and validate --gpu 0 --gpu-hybrid
#                  with PROFILE (default sim/profiles/h100-gpu-calibrated.yaml)
#                  of HQUERIES, HVROUNDS rounds, once per seed in HVSEEDS
#   (profile/ and validate*/ come back packed in results.tgz, sf10/ in sf10.tgz,
#   hybrid/ in hybrid.tgz)
# STEPS=hybrid runs only the machine check, SF1, the answers test and hybrid/.
# Every step has a time limit and the script goes on after a failure, so a
# short lease brings back all it can.
set -u
CARRY=$(cd "${CARRY:-gpucarry}" && pwd) || exit 1
OUT=${OUT:-out/gpu-validate}
DATA=${DATA:-gpudata/sf1}
mkdir -p "$OUT" "$PWD/gpudata/tmp" "$(dirname "$DATA")"
DATA=$(cd "$(dirname "$DATA")" && pwd)/$(basename "$DATA")
export TMPDIR=$PWD/gpudata/tmp
LOG=$OUT/log.txt
step() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
run() { local limit=$1; shift; timeout "$limit" "$@" >>"$LOG" 2>&1; echo "   exit $?" | tee -a "$LOG"; }

want() { [ -z "${STEPS:-}" ] || [ "$STEPS" = "$1" ]; }

step "machine"
run 20 nvidia-smi -L
run 20 nvcc --version
# NVRTC (the pipelines compiled at run time) and its builtins library.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
(ldconfig -p | grep -i nvrtc; ls /usr/local/cuda/lib64 2>/dev/null | grep -i nvrtc) >>"$LOG" 2>&1
for f in "$CARRY"/*.xz; do xz -dkf "$f"; done
chmod +x "$CARRY"/gostachio "$CARRY"/*.test

if want main; then
step "make ptx"
if command -v make >/dev/null; then
	run 120 make ptx
else # the same as the Makefile's ptx target
	(cd kernels/cuda && rm -f ptx/*.ptx && for f in *.cu; do nvcc -ptx -arch=compute_75 -o "ptx/${f%.cu}.ptx" "$f" || exit 1; done &&
		sha256sum *.cu *.cuh ptx/*.ptx >ptx/SOURCES.sha256) >>"$LOG" 2>&1
	echo "   exit $?" | tee -a "$LOG"
fi
tar czf "$OUT/ptx.tgz" kernels/cuda/ptx
export GOSTACHIO_PTX_DIR=$PWD/kernels/cuda/ptx

step "kernel tests (fresh PTX)"
(cd kernels/cuda && run 120 "$CARRY/cuda.test" -test.v -test.run GPU)
step "GPU pipeline tests"
(cd engine/gpu && run 120 "$CARRY/gpu.test" -test.v -test.run GPU)

fi
step "gen SF1"
[ -f "$DATA/manifest.json" ] || run 240 "$CARRY/gostachio" gen --sf 1 --out "$DATA"

step "Q1 and Q6 on the GPU backend, and all 22 as hybrid GPU runs, against the official answers (SF0.01, SF1)"
(cd engine && GOSTACHIO_SF1_DATA=$DATA run 240 "$CARRY/engine.test" -test.v -test.run "TestGPUAnswers|TestGPURowsMatchCPU")

if want main; then
step "gostachio query --gpu (the CLI: reads into pinned buffers)"
run 60 "$CARRY/gostachio" query --data "$DATA" --query q1,q6 --gpu 0 --policy overlap --set chunk=16MiB

step "gostachio gpu bench"
timeout 300 "$CARRY/gostachio" gpu bench --data "$DATA" --rounds "${ROUNDS:-5}" --set chunk=16MiB --json \
	>"$OUT/gpubench.json" 2>>"$LOG"
echo "   exit $?" | tee -a "$LOG"

step "calibrate --micro --gpu 0 (micro-benchmarks only)"
mkdir -p "$OUT/profile" "$OUT/validate"
run 300 "$CARRY/gostachio" calibrate --micro --gpu 0 --data "$DATA" --name "${PROFILE_NAME:-gpu-calibrated}" --out "$OUT/profile/gpu-calibrated.yaml"

step "validate --gpu 0: the simulator with that profile against the GPU backend"
if [ -f "$OUT/profile/gpu-calibrated.yaml" ]; then
	timeout 300 "$CARRY/gostachio" validate --gpu 0 --profile "$OUT/profile/gpu-calibrated.yaml" --data "$DATA" \
		--queries q1,q6 --policies serial,overlap --sets "chunk=16MiB;chunk=64MiB" --rounds "${VROUNDS:-9}" --warmup 2 \
		--out "$OUT/validate" >"$OUT/validate/report.txt" 2>>"$LOG"
	echo "   exit $?" | tee -a "$LOG"
	cat "$OUT/validate/report.txt" >>"$LOG"
	# A second validation (another order of the runs): the spread of the
	# error from one validation to the next.
	mkdir -p "$OUT/validate2"
	timeout 300 "$CARRY/gostachio" validate --gpu 0 --profile "$OUT/profile/gpu-calibrated.yaml" --data "$DATA" \
		--queries q1,q6 --policies serial,overlap --sets "chunk=16MiB;chunk=64MiB" --rounds "${VROUNDS:-9}" --warmup 2 \
		--seed 2 --out "$OUT/validate2" >"$OUT/validate2/report.txt" 2>>"$LOG"
	echo "   exit $?" | tee -a "$LOG"
	cat "$OUT/validate2/report.txt" >>"$LOG"
	run 30 "$CARRY/gostachio" sim --profile "$OUT/profile/gpu-calibrated.yaml" --data "$DATA" --query q3 --policy overlap
fi
# Few files come back from the GPU machine: one archive for the folders.
tar czf "$OUT/results.tgz" -C "$OUT" $(cd "$OUT" && ls -d profile validate validate2 2>/dev/null) &&
	rm -rf "$OUT/profile" "$OUT/validate" "$OUT/validate2"

if [ -z "${SKIP_TORCH:-}" ]; then
	step "PyTorch peer"
	PYTHONUNBUFFERED=1 timeout 300 python3 experiments/peers/pytorch/tpch_torch.py --data "$DATA" \
		--rounds "${ROUNDS:-5}" --answers tpch/answers/sf1 --json >"$OUT/torch.json" 2>>"$LOG"
	echo "   exit $?" | tee -a "$LOG"
fi
fi
if want main; then
step "ncu: the compiled Q1 kernel (one launch)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ -z "${NO_NCU:-}" ]; then
	run 150 "$NCU" --target-processes all -k regex:jit_agg -c "${NCU_LAUNCHES:-14}" --section SpeedOfLight --section Occupancy \
		--section LaunchStats "$CARRY/gostachio" gpu bench --data "$DATA" --queries q1 --rounds 1 --policies overlap
fi
if [ -n "${SF10:-}" ]; then
	step "SF10: gen, Q1/Q6 on the GPU backend, the CPU engine and PyTorch (their rows compared afterwards)"
	DATA10=$(dirname "$DATA")/sf10
	mkdir -p "$OUT/sf10"
	[ -f "$DATA10/manifest.json" ] || run 240 "$CARRY/gostachio" gen --sf 10 --out "$DATA10"
	for q in q1 q6; do
		for pol in serial overlap; do
			timeout 120 "$CARRY/gostachio" query --data "$DATA10" --query $q --gpu 0 --policy $pol --set chunk=64MiB --format csv \
				>"$OUT/sf10/$q-gpu-$pol.csv" 2>>"$LOG"
			echo "   gpu $q $pol exit $?" | tee -a "$LOG"
			timeout 120 "$CARRY/gostachio" query --data "$DATA10" --query $q --policy $pol --set chunk=64MiB --format csv \
				>"$OUT/sf10/$q-cpu-$pol.csv" 2>>"$LOG"
			echo "   cpu $q $pol exit $?" | tee -a "$LOG"
		done
	done
	PYTHONUNBUFFERED=1 timeout 200 python3 experiments/peers/pytorch/tpch_torch.py --data "$DATA10" \
		--rounds "${SF10_ROUNDS:-3}" --loaders "${SF10_LOADERS:-serial,prefetch}" --json >"$OUT/sf10/torch.json" 2>>"$LOG"
	echo "   torch exit $?" | tee -a "$LOG"
	run 30 python3 scripts/compare-rows.py "$OUT/sf10/torch.json" "$OUT"/sf10/*.csv
	tar czf "$OUT/sf10.tgz" -C "$OUT" sf10 && rm -rf "$OUT/sf10"
fi
fi
if want hybrid || want main; then
	step "hybrid: all 22 queries, GPU (--gpu-hybrid) and CPU alternated; validate --gpu-hybrid"
	H=$OUT/hybrid
	mkdir -p "$H/validate"
	for r in $(seq "${HROUNDS:-3}"); do
		timeout 120 "$CARRY/gostachio" query --data "$DATA" --query all --gpu 0 --gpu-hybrid --devices "${HDEVICES:-16}" --json \
			>"$H/gpu-$r.json" 2>"$H/gpu-$r.err"
		echo "   gpu round $r exit $?" | tee -a "$LOG"
		timeout 120 "$CARRY/gostachio" query --data "$DATA" --query all --devices "${HDEVICES:-16}" --json \
			>"$H/cpu-$r.json" 2>"$H/cpu-$r.err"
		echo "   cpu round $r exit $?" | tee -a "$LOG"
	done
	cat "$H/gpu-1.err" >>"$LOG"
	# One device's streams, traced (validate runs as many devices as the
	# profile has GPUs: one).
	for b in gpu cpu; do
		flags=""
		[ $b = gpu ] && flags="--gpu 0 --gpu-hybrid"
		timeout 60 "$CARRY/gostachio" query --data "$DATA" --query "${HTRACE:-q18}" $flags --devices 1 --trace "$H/trace-$b-1dev.json" \
			>/dev/null 2>>"$LOG"
		echo "   $b traced, 1 device: exit $?" | tee -a "$LOG"
	done
	# HVSEEDS: one validation per seed (the order of the engine's runs);
	# the first writes validate/, the others validate-s<seed>/.
	for seed in ${HVSEEDS:-1}; do
		V=$H/validate
		[ "$seed" = "${HVSEEDS%% *}" ] || [ -z "${HVSEEDS:-}" ] || V=$H/validate-s$seed
		mkdir -p "$V"
		timeout 200 "$CARRY/gostachio" validate --gpu 0 --gpu-hybrid --profile "${PROFILE:-sim/profiles/h100-gpu-calibrated.yaml}" --data "$DATA" \
			--queries "${HQUERIES:-q1,q3,q4,q6,q14,q15,q18}" --policies serial,overlap --sets "chunk=16MiB" --rounds "${HVROUNDS:-5}" --warmup 1 \
			--seed "$seed" --out "$V" >"$V/report.txt" 2>>"$LOG"
		echo "   validate (seed $seed) exit $?" | tee -a "$LOG"
		cat "$V/report.txt" >>"$LOG"
	done
	tar czf "$OUT/hybrid.tgz" -C "$OUT" hybrid && rm -rf "$H"
fi
step "done"
