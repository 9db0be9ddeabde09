SHELL := /bin/bash
# WebImage — the two commands a fresh machine needs are `make demo` and `make test`.
# Both install the missing Debian packages first (apt-get, only when something is missing).

SWIFT ?= swift
# The command, proxy and dataset engine are behind the package's `Tools` trait (Package.swift says why):
# every build and test here enables it, and the `OTel` trait too (span export from `webimage serve`, tested),
# except `make demo`: its release build of swift-otel's exporter stack (swift-protobuf, async-http-client,
# swift-nio-ssl) would be minutes the demo does not use.
TRAITS := --traits Tools,OTel
DEMO_TRAITS := --traits Tools
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
DEB_PACKAGES := libcurl4-openssl-dev libwebp-dev libjpeg62-turbo-dev libturbojpeg0-dev libpng-dev \
	libgif-dev libsqlite3-dev libavif-dev libavif-bin libheif-dev libjxl-dev liblcms2-dev libsnappy-dev libzstd-dev pkg-config curl webp \
	openssl nginx chromium wrk unbound

.PHONY: deps deps-bench bench-base-build bench-compare bench-profile-compare bench-serve-compare bench-dns bench-photos build test test-under-load test-swift test-load bench-build bench-serve test-python test-conformance conformance conformance-venv test-tsan test-asan test-package test-readme check-deploy check-engines demo bench format lint clean

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing missing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# Warning-free build: SwiftPM cannot combine -warnings-as-errors with the -suppress-warnings it passes
# to dependencies, so the log is checked for warnings in this project's own files instead.
build: deps
	@$(SWIFT) build --build-tests $(TRAITS) 2>&1 | tee .build-log.txt; test $${PIPESTATUS[0]} -eq 0
	@if grep -E '(Sources|Tests|Examples|Benchmarks)/[^ ]*:[0-9]+:[0-9]+: warning:' .build-log.txt; then \
		echo "error: the build printed warnings (above)"; exit 1; fi
	@rm -f .build-log.txt

# Python for the tests that read the bulk tars with the `webdataset` package, check the Parquet reader
# against pyarrow and fastparquet, run `bulk` against moto's S3 server (boto3 checks the objects), and check
# deploy/kubernetes with kubernetes-validate, compare bulk's exif field with img2dataset's reader
# (exifread-nocycle) and load its Parquet output with Hugging Face datasets (pip, into .venv-test; test tools,
# never dependencies of the library).
# img2dataset 1.47 itself goes into .venv-img2dataset (its own pins: webdataset<0.3, albumentations,
# opencv): the parity test runs it and bulk on one URL list and compares their outputs.
# --no-compile: pip byte-compiles every module it installs, most of which no test imports; Python compiles
# what is imported when it is (about a minute of a fresh CI machine's two cores saved).
test-python:
	@[ -x .venv-test/bin/python3 ] && .venv-test/bin/python3 -c 'import webdataset, pyarrow, fastparquet, moto.server, boto3, kubernetes_validate, exifread, datasets' 2>/dev/null || \
		{ python3 -m venv .venv-test && .venv-test/bin/pip install -q --no-compile webdataset pyarrow fastparquet 'moto[server]' boto3 kubernetes-validate exifread-nocycle==3.0.1 datasets; }
	@[ -x .venv-img2dataset/bin/img2dataset ] || \
		{ python3 -m venv .venv-img2dataset && .venv-img2dataset/bin/pip install -q --no-compile img2dataset==1.47.0; }

# Every stage runs and reports, whatever an earlier one did (the suite's stages fail on their own when the
# build did), and the last line names the stages that passed and failed; the exit status is 1 if any failed.
# The Python venvs (test-python, and conformance-venv for test-conformance) are installed in the background
# while the build runs: pip mostly waits on downloads and disk, and on a fresh machine that is a minute or two
# the build's compilers can use; the test-python stage waits for it and prints what it printed.
TEST_STAGES := build test-python test-swift test-conformance test-load
test: deps
	@passed=""; failed=""; venvs_log="$$(mktemp /tmp/webimage-venvs.XXXXXX)"; \
	$(MAKE) --no-print-directory test-python conformance-venv >"$$venvs_log" 2>&1 & venvs=$$!; \
	for stage in $(TEST_STAGES); do \
		echo "==> make test: $$stage"; \
		if [ "$$stage" = test-python ]; then \
			wait $$venvs; status=$$?; cat "$$venvs_log"; rm -f "$$venvs_log"; \
		else \
			$(MAKE) --no-print-directory $$stage; status=$$?; \
		fi; \
		if [ $$status -eq 0 ]; then passed="$$passed $$stage"; else failed="$$failed $$stage"; fi; \
	done; \
	echo "make test: passed:$${passed:- none}; failed:$${failed:- none}"; \
	[ -z "$$failed" ]

# At most three tests at once: on Linux, Swift's cooperative pool and Dispatch's default global queue share
# as many threads as cores, and the suite's synchronous tests (CPU work, waits on child processes) hold
# them; with every test started at once, the async ones beside them waited past their 120 s limits (two
# cores: about 30 failures a run). Three keeps the run near five minutes on two cores.
SWIFT_TEST_WIDTH ?= 3
test-swift:
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(SWIFT_TEST_WIDTH) $(SWIFT) test --skip-build $(TRAITS)

# The whole `make test` beside a CPU hog that keeps every core busy (Debian's stress-ng, four workers): the
# suite's waits are on events with generous limits, so it passes on a busy machine too.
test-under-load: deps
	@command -v stress-ng >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq stress-ng; }
	@stress-ng --cpu 4 --timeout 0 --quiet & hog=$$!; \
	$(MAKE) --no-print-directory test; status=$$?; \
	kill $$hog; wait $$hog 2>/dev/null; \
	echo "make test-under-load: make test beside stress-ng --cpu 4 exited $$status"; exit $$status

# `webimage serve` under wrk at 64 connections for 60 s while its origin misbehaves (Tests/Load/serve_faults.py:
# slow, 500, endless body, not an image, a redirect to a refused address): every request answered, every error
# counted in /metrics, RSS under README's bound, a clean SIGTERM. Run after the suite, alone, so its load does
# not slow the other tests. LOAD_SECONDS shortens it.
LOAD_SECONDS ?= 60
test-load: deps
	python3 Tests/Load/serve_faults.py --webimage "$$($(SWIFT) build --show-bin-path)/webimage" \
		--image Tests/Fixtures/corpus/images/coffee-progressive.jpg --duration $(LOAD_SECONDS)

# Decoder conformance (Tests/Conformance/check.py, docs/CONFORMANCE.md): numpy, Pillow, pillow-heif and pypng
# decode the references, in .venv-conformance (pip, the first time and whenever requirements.txt changes; test
# tools, never dependencies of the library).
CONFORMANCE_VENV := .venv-conformance
conformance-venv:
	@cmp -s Tests/Conformance/requirements.txt $(CONFORMANCE_VENV)/requirements.txt 2>/dev/null || \
		{ python3 -m venv $(CONFORMANCE_VENV) && $(CONFORMANCE_VENV)/bin/pip install -q --no-compile -r Tests/Conformance/requirements.txt \
		&& cp Tests/Conformance/requirements.txt $(CONFORMANCE_VENV)/requirements.txt; }

# The in-repository subset (Tests/Fixtures/conformance) through the debug webimage that `make build` made.
test-conformance: conformance-venv
	$(CONFORMANCE_VENV)/bin/python3 Tests/Conformance/check.py --webimage "$$($(SWIFT) build --show-bin-path)/webimage"

# The full suites: CONFORMANCE_SUITES holds git clones of github.com/pnggroup/libpng (glennrp/libpng moved there), libjxl/conformance,
# AOMediaCodec/av1-avif and SDWebImage/SDWebImage, as the folders libpng, conformance, av1-avif and SDWebImage
# (docs/CONFORMANCE.md says how its table was made). Not part of `make test`; about ten minutes.
CONFORMANCE_SUITES ?= $(CURDIR)/.conformance-suites
conformance: deps conformance-venv
	$(SWIFT) build $(TRAITS) --product webimage
	$(CONFORMANCE_VENV)/bin/python3 Tests/Conformance/check.py --webimage "$$($(SWIFT) build --show-bin-path)/webimage" \
		--suite pngsuite=$(CONFORMANCE_SUITES)/libpng --suite jxl=$(CONFORMANCE_SUITES)/conformance \
		--suite avif=$(CONFORMANCE_SUITES)/av1-avif --suite sdwebimage=$(CONFORMANCE_SUITES)/SDWebImage

# Sanitizers (each in its own build folder). TSan covers the concurrent parts; ASan runs everything,
# with LeakSanitizer told about the toolchain's own XCTest leak (.ci/lsan-suppressions.txt).
# TSan builds without the OTel trait: swift-otel 1.6.0 does not compile with -sanitize=thread under Swift 6.3.1
# (its batch processors' `logger` captures become "sending risks data races" errors), so the span-export test,
# which needs that exporter in the binary, is skipped there; the proxy's span code and the downloader's step
# hook are still built and run.
SANITIZER_TRAITS := --traits Tools
test-tsan: deps
	SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(SWIFT_TEST_WIDTH) $(SWIFT) test $(SANITIZER_TRAITS) --sanitize=thread --scratch-path .build-tsan --skip ServeTracing --filter "StepObserver|Downloader|ImageTask|Transport|CookieJar|Cach|LocalImageServer|ResponseBody|QueueChannel|HTTP2|Trust|EarlyCancel|Credential|TotalTimeout|CReturnCode|HeaderInjection|Nginx|DecodeBudget|Lifecycle|FinishNotification|Observability|ImageTransformer|BodyLimit|AnimationMemory|DestinationPolicy|ConnectionLimit|RetryPolicy|Serve|Proxy|URLPrefix|S3|BulkEngine|WebDataset|BulkDNS"

# Without the OTel trait, as TSan (swift-otel is not this project's memory to check, and may not build with a
# sanitizer). Serial: ASan slows everything several times, and tests that wait on a thread (sync ones, CLI children)
# then starve the parallel async tests' cooperative pool into their time limits; run one at a time, the
# check stays about memory.
test-asan: deps test-python
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan-suppressions.txt $(SWIFT) test $(SANITIZER_TRAITS) --sanitize=address --scratch-path .build-asan --no-parallel --skip ServeTracing

demo: deps
	$(SWIFT) run -c release $(DEMO_TRAITS) webimage demo

# Side-by-side benchmarks (Benchmarks/, see Benchmarks/README.md): release build, nginx on 127.0.0.1 serving a
# generated file set, every client interleaved, report written to docs/BENCHMARKS.md (~10 minutes).
# The benchmarks are their own package (Benchmarks/Package.swift), so `make test` never compiles them.
BENCH_CORPUS ?= $(CURDIR)/Tests/Fixtures/corpus/images
BENCH_ROUNDS ?= 7
# What only the benchmarks need: libvips' vipsthumbnail, libavif's and libjxl's command-line encoders (for
# the file set), wrk and nginx's image_filter module (the serve workload), valgrind (the profiles), and Pillow,
# img2dataset and thumbor
# in .venv-bench (baselines, never dependencies of the library).
BENCH_DEB_PACKAGES := libvips-tools libavif-bin libjxl-tools wrk libnginx-mod-http-image-filter valgrind
deps-bench: deps
	@missing=""; for p in $(BENCH_DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing missing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@[ -x .venv-bench/bin/img2dataset ] && [ -x .venv-bench/bin/thumbor ] && \
		.venv-bench/bin/python3 -c 'import PIL, img2dataset, thumbor' 2>/dev/null || \
		{ python3 -m venv .venv-bench && .venv-bench/bin/pip install -q Pillow img2dataset==1.47.0 'thumbor==7.8.*'; }

# The release webimage is built inside the Benchmarks package (a product of its dependency), so the library
# is compiled once for both executables.
BENCH_BIN = $$($(SWIFT) build -c release --package-path Benchmarks --show-bin-path)
# The serve workload: rounds, and seconds of each measured wrk run (× two concurrencies × four services).
BENCH_SERVE_ROUNDS ?= 3
BENCH_SERVE_SECONDS ?= 8
bench-build:
	$(SWIFT) build -c release --package-path Benchmarks --product webimage
	$(SWIFT) build -c release --package-path Benchmarks --product WebImageBench
	@mkdir -p docs

bench: deps deps-bench bench-build
	WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench run --rounds $(BENCH_ROUNDS) \
		--serve-rounds $(BENCH_SERVE_ROUNDS) --serve-seconds $(BENCH_SERVE_SECONDS) --corpus $(BENCH_CORPUS) --output docs/BENCHMARKS.md --command "make bench"

# `make bench-compare BASE=<commit>`: the benchmarks of a checkout of BASE and of this tree, one after the
# other in one invocation on this machine (each with its own harness, BENCH_ROUNDS rounds), base, head, head,
# base, and the rows the reports share side by side with their change in each order and its mean (a drift of
# the machine cancels out), in docs/BENCHMARKS-COMPARE.md. BASE is checked out as a git
# worktree in .bench-base/ (kept for the next comparison with the same BASE) and built in release by its own
# Makefile (about 15 minutes the first time, then 2 × `make bench`);
# both harnesses run from here, where .venv-bench is.
# The default BASE is the commit before the package's reshaping (the Tools trait, the engines' move, one
# transport, the test-target split).
BASE ?= 22a34e3
# BASE's worktree in .bench-base/, built in release by its own Makefile.
bench-base-build:
	@if [ "$$(git -C .bench-base rev-parse HEAD 2>/dev/null)" != "$$(git rev-parse '$(BASE)^{commit}')" ]; then \
		git worktree remove --force .bench-base 2>/dev/null || rm -rf .bench-base; git worktree prune; \
		git worktree add --detach .bench-base $(BASE); fi
	$(MAKE) -C .bench-base bench-build

bench-compare: deps deps-bench bench-build bench-base-build
	base_bin=$$($(SWIFT) build -c release --package-path .bench-base/Benchmarks --show-bin-path) && \
		WEBIMAGE_CLI=$$base_bin/webimage $$base_bin/WebImageBench run --rounds $(BENCH_ROUNDS) \
		--serve-rounds $(BENCH_SERVE_ROUNDS) --serve-seconds $(BENCH_SERVE_SECONDS) \
		--corpus $(CURDIR)/.bench-base/Tests/Fixtures/corpus/images --output $(CURDIR)/.bench-base/base.md \
		--command "make bench-compare (base)"
	WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench run --rounds $(BENCH_ROUNDS) \
		--serve-rounds $(BENCH_SERVE_ROUNDS) --serve-seconds $(BENCH_SERVE_SECONDS) --corpus $(BENCH_CORPUS) \
		--output $(CURDIR)/.bench-base/head.md --command "make bench-compare (head)"
	@# The second pair in the other order (head first), so that the machine's drift cancels in the mean.
	WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench run --rounds $(BENCH_ROUNDS) \
		--serve-rounds $(BENCH_SERVE_ROUNDS) --serve-seconds $(BENCH_SERVE_SECONDS) --corpus $(BENCH_CORPUS) \
		--output $(CURDIR)/.bench-base/head2.md --command "make bench-compare (head, second)"
	base_bin=$$($(SWIFT) build -c release --package-path .bench-base/Benchmarks --show-bin-path) && \
		WEBIMAGE_CLI=$$base_bin/webimage $$base_bin/WebImageBench run --rounds $(BENCH_ROUNDS) \
		--serve-rounds $(BENCH_SERVE_ROUNDS) --serve-seconds $(BENCH_SERVE_SECONDS) \
		--corpus $(CURDIR)/.bench-base/Tests/Fixtures/corpus/images --output $(CURDIR)/.bench-base/base2.md \
		--command "make bench-compare (base, second)"
	python3 Benchmarks/compare_reports.py .bench-base/base.md .bench-base/head.md \
		--again .bench-base/head2.md .bench-base/base2.md \
		--base-label "$$(git -C .bench-base rev-parse --short HEAD) (base)" \
		--head-label "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD || echo +changes)" \
		--command "make bench-compare BASE=$(BASE) BENCH_ROUNDS=$(BENCH_ROUNDS)" > docs/BENCHMARKS-COMPARE.md
	@echo "docs/BENCHMARKS-COMPARE.md written"

# `make bench-profile-compare BASE=<commit>` (about 2 minutes once BASE is built): the small-file profile of
# BASE's harness and of this tree's under callgrind, one after the other, in docs/BENCHMARKS-PROFILE-COMPARE.md
# (Benchmarks/callgrind_compare.py): instructions per file move by under 1 % between runs, so a change of a
# few per cent shows.
bench-profile-compare: deps deps-bench bench-build bench-base-build
	base_bin=$$($(SWIFT) build -c release --package-path .bench-base/Benchmarks --show-bin-path) && \
		python3 Benchmarks/callgrind_compare.py --base $$base_bin/WebImageBench --head $(BENCH_BIN)/WebImageBench \
		--base-label "$$(git -C .bench-base rev-parse --short HEAD) (base)" \
		--head-label "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- Sources || echo ' + changes')" \
		--output docs/BENCHMARKS-PROFILE-COMPARE.md --command "make bench-profile-compare BASE=$(BASE)"

# The serve workloads (about 12 minutes): `webimage serve` against thumbor and nginx image_filter under wrk, then
# imgproxy's own workload (make bench-serve-imgproxy); each rewrites only its section of docs/BENCHMARKS.md.
bench-serve: deps deps-bench bench-build bench-photos
	WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench serve-bench --rounds $(BENCH_SERVE_ROUNDS) \
		--seconds $(BENCH_SERVE_SECONDS) --corpus $(BENCH_CORPUS) --output docs/BENCHMARKS.md --command "make bench-serve"
	$(MAKE) --no-print-directory bench-serve-imgproxy

# `make bench-serve-compare BASE=<commit>` (about 6 minutes once BASE is built): the serve workload above with
# BASE's release `webimage serve` as one more service in the same rounds, and a target that this tree's CPU per
# image stays within 5 % of BASE's; rewrites the serve section of docs/BENCHMARKS.md.
bench-serve-compare: deps deps-bench bench-build bench-base-build
	base_bin=$$($(SWIFT) build -c release --package-path .bench-base/Benchmarks --show-bin-path) && \
		WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench serve-bench --rounds $(BENCH_SERVE_ROUNDS) \
		--seconds $(BENCH_SERVE_SECONDS) --corpus $(BENCH_CORPUS) --output docs/BENCHMARKS.md \
		--base-cli $$base_bin/webimage --base-label "$$(git -C .bench-base rev-parse --short HEAD)" \
		--command "make bench-serve-compare BASE=$(BASE)"

# `webimage bulk` against img2dataset when DNS is slow (Benchmarks/WebImageBench/DNSBenchmark.swift, about 5
# minutes): in a network and mount namespace of its own with only lo (unshare, as root), Debian's unbound on
# 127.0.0.1:53 as the system resolver, forwarding to a server that answers each query after 50 ms; rewrites
# only the DNS section of docs/BENCHMARKS.md.
bench-dns: deps deps-bench bench-build
	$(SUDO) unshare --net --mount env WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench dns-bench \
		--output docs/BENCHMARKS.md --command "make bench-dns"

# The 100 photographs of imgproxy's benchmark workload (Benchmarks/photos/SOURCES.md: nine Debian bookworm
# packages, about 640 MiB of .deb files kept in .bench-photos/debs), fitted into 2040x1400 as JPEG q95 in
# .bench-photos/photos; a second run with the same manifest does nothing.
bench-photos: deps-bench
	.venv-bench/bin/python3 Benchmarks/photos/fetch_photos.py .bench-photos/photos --cache .bench-photos/debs

# imgproxy's own benchmark workload (Benchmarks/WebImageBench/ImgproxyWorkload.swift): the photographs as JPEG,
# PNG, WebP and AVIF sources (made once into .bench-photos/photos/formats), each fitted into 512x512 in its own
# format by webimage serve and thumbor, at concurrencies 2 and 16 (wrk, 20 s each); rewrites only its section
# of docs/BENCHMARKS.md. About 15 minutes, the sources' first making included.
IMGPROXY_ROUNDS ?= 1
bench-serve-imgproxy: deps deps-bench bench-build bench-photos
	WEBIMAGE_CLI=$(BENCH_BIN)/webimage $(BENCH_BIN)/WebImageBench serve-bench --workload imgproxy \
		--photos $(CURDIR)/.bench-photos/photos --rounds $(IMGPROXY_ROUNDS) --output docs/BENCHMARKS.md \
		--command "make bench-serve-imgproxy"

format:
	$(SWIFT) format --in-place --recursive Sources Tests Examples Benchmarks

# WebImage as another package's versioned git dependency (Examples/Package/check.sh, about a minute).
test-package: deps
	bash Examples/Package/check.sh

# Every ```swift block of README.md compiled (Examples/README/check.py): blocks marked
# `<!-- test-readme: compiled-in: PATH -->` (all of them today) are checked to be PATH's lines, which make test
# builds; blocks marked `<!-- test-readme: skip: REASON -->` are listed; any other block is built as its own
# executable target against this repository by path.
test-readme: deps
	SWIFT=$(SWIFT) python3 Examples/README/check.py

# deploy/Dockerfile's runtime stage without a Docker engine (deploy/check-runtime.sh, as root: debootstrap,
# chroot): the static release build in a Debian bookworm minbase root file system (.build-rootfs/) with only
# the Dockerfile's runtime packages; ldd, then webimage info, convert and bulk as the image's user. A few
# minutes the first time. Not part of `make test`.
check-deploy: deps
	$(SUDO) env "PATH=$$PATH" SWIFT=$(SWIFT) bash deploy/check-runtime.sh

# deploy/spark/bulk_spark.py and deploy/ray/bulk_ray.py run for real (deploy/check-engines.sh): Spark
# local[2] and a local Ray cluster, three tasks each, against sample images on 127.0.0.1, then again with
# --output s3://… against moto's S3 server when .venv-test has it (make test-python); pyspark and ray go
# into .venv-engines with pip the first time. Not part of `make test`.
check-engines: deps
	SWIFT=$(SWIFT) bash deploy/check-engines.sh

# What CI checks: the toolchain's `swift format lint --strict` with .swift-format (fix with `make format`),
# then that no function in Sources/ or Examples/ runs past 80 lines (.ci/function-length.py).
lint:
	$(SWIFT) format lint --strict --parallel --recursive Sources Tests Examples Benchmarks
	python3 .ci/function-length.py

clean:
	rm -rf .build .build-* demo-output
