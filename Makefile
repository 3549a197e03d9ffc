# pathkit: `make run` (set up + demo), `make test`, `make docs`, `make bench`, `make lint`, `make api-check`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.pathkit-installed
PIP := $(BIN)/python -m pip
PLUGINS := plugins/encoders plugins/generators plugins/datasets plugins/metrics
EXAMPLE := examples/pathkit-example-plugin
INSTALL_INPUTS := pyproject.toml constraints.txt requirements-dev.txt $(addsuffix /pyproject.toml,$(PLUGINS)) $(EXAMPLE)/pyproject.toml $(wildcard $(EXAMPLE)/pathkit_example_plugin/*.py)

.PHONY: install run test test-all test-suite docs bench lint clean api-check

$(STAMP): $(INSTALL_INPUTS)
	@echo "pathkit install 1/5: virtual environment $(VENV) ($(PYTHON) -m venv; kept when it exists)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "pathkit install 2/5: pip, upgraded inside $(VENV)"
	@$(PIP) install -q --upgrade pip
	@echo "pathkit install 3/5: torch + torchvision, the pinned pair of constraints.txt (the largest step: minutes on a fresh machine)"
	@$(PIP) install -q -c constraints.txt torch==2.14.1 torchvision==0.29.1
	@echo "pathkit install 4/5: pathkit and its plugin distributions ($(notdir $(PLUGINS))), editable, with the test tools"
	@# setuptools prints an "Editable installation" notice per editable package (information only)
	@PYTHONWARNINGS="ignore:Editable installation" $(PIP) install -q -c constraints.txt -r requirements-dev.txt -e . $(addprefix -e ,$(PLUGINS))
	@# the example third-party plugin goes in as a regular (non-editable) package, as a user would install it
	@echo "pathkit install 5/5: the example third-party plugin ($(EXAMPLE)), as a user would install one"
	@$(PIP) install -q -c constraints.txt --no-deps --force-reinstall $(EXAMPLE)
	@touch $(STAMP)
	@echo "pathkit installed in $(VENV): try $(BIN)/pathkit --help"

install: $(STAMP)

run: install
	@echo "pathkit demo: a synthetic report-generation miniature, tiled, extracted, trained and scored (a few minutes on a laptop)"
	$(BIN)/pathkit run

test: install
	$(BIN)/python -m pytest -q -m "not slow"

test-all: install
	$(BIN)/python -m pytest -q

# The long end-to-end and multi-process tests CI runs after `make test`: the benchmark suites (a
# 12-cell suite over shared slides, sharded and resumed; the synthetic all-tasks suite, its two shards
# at once, then rerun reusing every cell), the REG release folder with weights, the extraction soaks (killed workers; a
# failing disk and another host's locks), the two-process extraction and training checks, the
# example plugin's demo trained until it beats the train mean, a whole `pathkit run` piped
# through a subprocess (no path broken, the low-tissue note once), BiGen, SCOUT and HistGen learning
# their reports, GOLDMARK's reciprocal cross-site run, the five wheels installed into a fresh
# virtual environment outside the checkout running doctor, list plugins and the demo, the
# report of a run folder the v0.1.0 release wrote rebuilt, docs/scale.md's sbatch array run on a
# real single-node Slurm cluster and a two-cell suite submitted to it by `pathkit bench --slurm`
# (tests/slurm: skipped with the reason when not root or without the slurm-wlm and munge packages,
# which .ci/run installs).
test-suite: install
	$(BIN)/python -m pytest -q -m slow tests/bench/suite/test_bench.py \
		tests/tissue/test_deep.py tests/core/test_tissue_mask_reruns.py \
		tests/plugins/encoders/test_slide_suite.py tests/plugins/encoders/test_encoder_defaults.py \
		tests/plugins/encoders/test_slide_reruns.py \
		tests/tasks/survival/test_survival_demo.py tests/plugins/generators/test_survival_heads.py \
		tests/plugins/generators/test_survival_nll.py::test_abmil_nll_learns_the_hazard \
		tests/tasks/ordinal/test_ordinal_demo.py \
		tests/hardening/test_killed_after_score.py \
		tests/plugins/datasets/test_catalogue.py tests/bench/suite/test_eva_patch_suite.py \
		tests/bench/suite/test_export_merge.py tests/core/report/test_catalogue_sections_browser.py \
		tests/tasks/retrieval/test_retrieval_demo.py \
		tests/tasks/fewshot/test_fewshot_demo.py tests/bench/suite/test_endpoints_suite.py \
		tests/tasks/zeroshot/test_zeroshot_run.py \
		tests/examples/test_slide_regression.py::test_slide_regression_runs_end_to_end_and_beats_the_train_mean \
		tests/compat/test_legacy_plugin.py::test_the_legacy_plugin_runs_end_to_end_with_deprecation_warnings_and_no_error \
		tests/core/test_cli_output.py::test_a_piped_run_breaks_no_line_inside_a_path \
		tests/core/test_cli_output.py::test_a_run_says_once_that_its_slides_are_below_the_cohort_minimum_tissue_area \
		tests/plugins/datasets/test_reg2025_end_to_end.py::test_reg2025_release_folder_runs_end_to_end_with_weights \
		tests/core/features/test_sharded_extraction.py::test_soak_four_workers_two_killed_and_restarted \
		tests/readers/test_slide_readers_realdata.py \
		tests/core/features/test_sharded_extraction.py::test_soak_with_a_failing_disk_and_another_hosts_locks \
		tests/core/features/test_feature_cli.py::test_two_gloo_processes_give_the_same_features_as_one \
		tests/core/training/test_trainer_protocol.py::test_two_cpu_processes_train_one_synchronised_model \
		tests/plugins/generators/test_bigen.py::test_learns_the_report_from_features_and_beats_most_frequent_report \
		tests/plugins/datasets/test_goldmark_pipeline.py::test_reciprocal_cross_site_run_gives_the_four_settings \
		tests/plugins/generators/test_scout.py::test_learns_the_report_from_features_and_beats_most_frequent_report \
		'tests/plugins/generators/test_report_generators.py::test_learns_the_report_from_features_and_beats_most_frequent_report[histgen]' \
		tests/compat/test_wheels.py tests/examples/test_tcga_folds_suite.py \
		tests/compat/test_format_versions.py::test_pathkit_report_rebuilds_the_report_of_a_v010_run_folder \
		tests/slurm/test_slurm_arrays.py tests/slurm/test_bench_slurm.py

# The public API (tests/compat/public_modules.txt, docs/api/stability.md) against the last release
# (.ci/api-baseline): griffe's breaking-change check; a removal without a shim fails.
api-check: install
	$(BIN)/python .ci/api_check.py

# The documentation site (mkdocs.yml) into site/; --strict fails on a broken link or a page left out.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	@echo "documentation site built: open site/index.html"

bench: install
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

lint: install
	$(BIN)/ruff check pathkit_core pathkit_tasks pathkit_bench pathkit_sdk pathkit_interop pathkit_tissue pathkit_readers plugins tests benchmarks examples docs .ci

clean:
	rm -rf $(VENV) pathkit-work site
