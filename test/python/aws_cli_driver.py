"""Runs aws cli commands one after another in one Python process (test/helpers/aws-cli.ts).

The `aws` script is `sys.exit(awscli.clidriver.main())`; this runs the same entry point for each
command, with the command's own environment, working directory, stdout and stderr, so a command
behaves as a fresh `aws` process does, without paying Python's and aws cli's start-up (about 0.6 s of
CPU) every time. Requests come as JSON lines on stdin: {"args", "env", "cwd"}; each answer is one JSON
line on fd 3: {"code", "stdout", "stderr"} (stdout and stderr as base64 of their bytes).

botocore parses its JSON data files (the endpoint rules, the S3 model) again for every command's new
session: most of a command's CPU. The driver parses each file once (keyed by its path, size and
mtime) and hands every session the same objects, as botocore's own per-session cache does within one.
"""
import base64
import io
import json
import os
import sys

import awscli
import awscli.clidriver
import botocore.loaders

answers = os.fdopen(3, "w", encoding="utf-8")
# awscli's import puts its data directory on AWS_DATA_PATH (after any the environment had).
AWSCLI_DATA = os.path.join(os.path.dirname(os.path.abspath(awscli.__file__)), "data")


_parsed = {}
_load_file = botocore.loaders.JSONFileLoader._load_file


def _load_file_once(self, full_path, open_method):
    try:
        st = os.stat(full_path)
    except OSError:
        return None
    key = (full_path, st.st_size, st.st_mtime_ns)
    if key not in _parsed:
        _parsed[key] = _load_file(self, full_path, open_method)
    return _parsed[key]


botocore.loaders.JSONFileLoader._load_file = _load_file_once


def run(request):
    os.environ.clear()
    os.environ.update(request["env"])
    data_path = [p for p in os.environ.get("AWS_DATA_PATH", "").split(os.pathsep) if p]
    os.environ["AWS_DATA_PATH"] = os.pathsep.join([os.path.expanduser(os.path.expandvars(p)) for p in data_path] + [AWSCLI_DATA])
    # What the `aws` script does before it imports the driver.
    if os.environ.get("LC_CTYPE", "") == "UTF-8":
        os.environ["LC_CTYPE"] = "en_US.UTF-8"
    os.chdir(request["cwd"])
    out, err = io.BytesIO(), io.BytesIO()
    real = sys.stdout, sys.stderr, sys.stdin
    wrappers = (io.TextIOWrapper(out, encoding="utf-8", write_through=True),
                io.TextIOWrapper(err, encoding="utf-8", write_through=True))
    sys.stdout, sys.stderr = wrappers
    sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    try:
        driver = awscli.clidriver.create_clidriver()
        code = driver.main(request["args"])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # what would end an `aws` process with a traceback
        sys.stderr.write(f"{type(e).__name__}: {e}\n")
        code = 1
    finally:
        sys.stdout, sys.stderr, sys.stdin = real
        for wrapper in wrappers:
            try:
                wrapper.flush()
                # The bytes stay readable: a wrapper that is collected closes what it wraps.
                wrapper.detach()
            except Exception:
                pass
    return {
        "code": code if code is not None else 0,
        "stdout": base64.b64encode(out.getvalue()).decode("ascii"),
        "stderr": base64.b64encode(err.getvalue()).decode("ascii"),
    }


for line in sys.stdin:
    if not line.strip():
        continue
    answers.write(json.dumps(run(json.loads(line))) + "\n")
    answers.flush()
