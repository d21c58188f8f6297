# ruff: noqa: E501  (hand-written conversation text reads better unwrapped)
"""Hand-written conversation templates for the retrieval dataset (see ``retrieval_data``).

Each scenario is a short thread of turns with ``{slot}`` placeholders, filled once per
workspace. Questions name the turn(s) that answer them by position; a question with a
``context`` is a follow-up: it only makes sense after those recent turns. Questions are
paraphrased on purpose: they share few words with the turn that answers them.
"""

from __future__ import annotations

from typing import Any

Scenario = dict[str, Any]

SCENARIOS: list[Scenario] = [
    {
        "name": "flaky_test",
        "turns": [
            ("user", "{test} keeps failing on CI maybe one run in five, never on my laptop."),
            (
                "assistant",
                "Intermittent only on CI usually means ordering or time. Can you paste the assertion output from a red run?",
            ),
            (
                "user",
                "It says expected 2 rows got 3. The fixture {fixture} creates rows and the cleanup runs after the next test already started.",
            ),
            (
                "assistant",
                "That's shared state: {fixture} has module scope, so rows leak between tests when pytest-xdist splits them across workers. Make it function-scoped and wrap each test in a transaction that rolls back.",
            ),
            (
                "user",
                "Switched {fixture} to function scope with a rollback, 200 CI reruns all green.",
            ),
            (
                "assistant",
                "Good. Add a note in CONTRIBUTING that database fixtures must never be module scoped.",
            ),
        ],
        "questions": [
            {
                "q": "why was that test intermittently red in the pipeline but fine locally?",
                "evidence": [3],
            },
            {
                "q": "how did we verify the intermittent CI failure was really gone?",
                "evidence": [4],
            },
            {"q": "what fixture rule did we want written down for contributors?", "evidence": [5]},
            {
                "q": "what was the fix for it in the end?",
                "evidence": [3, 4],
                "context": [
                    ("user", "remember the {test} problem from a few weeks ago?"),
                    (
                        "assistant",
                        "Yes, {test} was failing intermittently on CI because of the {fixture} fixture.",
                    ),
                ],
            },
        ],
    },
    {
        "name": "queue_choice",
        "turns": [
            (
                "user",
                "For {job_kind} we need some background processing. {option_a} or {option_b}?",
            ),
            (
                "assistant",
                "{option_a} gives you retries and scheduling out of the box but adds a broker to operate. {option_b} is simpler if you already run it, but you'd hand-roll retries.",
            ),
            (
                "user",
                "We already run {option_b} in production and the ops team does not want another stateful service.",
            ),
            (
                "assistant",
                "Then go with {option_b}. Keep the job payloads as JSON and put an idempotency key on each one so a retry never double-applies.",
            ),
            (
                "user",
                "decision: {job_kind} runs on {option_b}, payloads are JSON with an idempotency key. {option_a} rejected because ops won't run another broker.",
            ),
            (
                "assistant",
                "Recorded. I'd also cap the backlog so a stuck consumer cannot grow memory without bound.",
            ),
        ],
        "questions": [
            {
                "q": "which background processing technology did we settle on for {job_kind}?",
                "evidence": [4],
            },
            {"q": "why did we turn down {option_a}?", "evidence": [2, 4]},
            {"q": "what guard against a runaway backlog was suggested?", "evidence": [5]},
            {
                "q": "and what format do the payloads use there?",
                "evidence": [3, 4],
                "context": [
                    ("user", "what did we pick for {job_kind}?"),
                    ("assistant", "{job_kind} runs on {option_b}; {option_a} was rejected."),
                ],
            },
        ],
    },
    {
        "name": "slow_endpoint",
        "turns": [
            ("user", "{endpoint} went from 80 ms to almost 2 seconds after last week's release."),
            ("assistant", "Let's profile it. Can you enable query logging for one request?"),
            ("user", "There are 400 SELECTs on {table}, one per item in the response."),
            (
                "assistant",
                "Classic N+1: the serializer loads {relation} lazily for every row. Prefetch it in the list query with a single join, then the count drops to two statements.",
            ),
            (
                "user",
                "With the prefetch it's 95 ms at p50 again. Also added a composite index on {table} ({index_cols}).",
            ),
            (
                "assistant",
                "Nice. Put a test that asserts the number of statements so the regression cannot come back silently.",
            ),
        ],
        "questions": [
            {"q": "what made {endpoint} so sluggish after the release?", "evidence": [3]},
            {"q": "which columns got a new composite index?", "evidence": [4]},
            {"q": "how do we stop that kind of slowdown from sneaking back in?", "evidence": [5]},
            {
                "q": "how fast is it now?",
                "evidence": [4],
                "context": [
                    ("user", "the {endpoint} latency regression, what caused it?"),
                    ("assistant", "An N+1 on {table}: {relation} was loaded lazily per row."),
                ],
            },
        ],
    },
    {
        "name": "code_review",
        "turns": [
            ("user", "Can you review PR #{pr}? It adds {feature}."),
            (
                "assistant",
                "Three things on #{pr}: {helper} swallows exceptions with a bare except, the new module has no tests for the empty case, and the name {bad_name} says nothing about what it returns.",
            ),
            ("user", "Fair. What should {bad_name} be called?"),
            ("assistant", "It returns the pending items due today, so {good_name} reads better."),
            (
                "user",
                "Renamed it to {good_name}, replaced the bare except with the two specific errors, and added empty-input tests. Approved and merged.",
            ),
        ],
        "questions": [
            {
                "q": "what problems did the review of the {feature} change point out?",
                "evidence": [1],
            },
            {"q": "what did we rename the badly named function to?", "evidence": [3, 4]},
            {
                "q": "and was it merged after the fixes?",
                "evidence": [4],
                "context": [
                    ("user", "what happened with PR #{pr}?"),
                    (
                        "assistant",
                        "PR #{pr} added {feature}; the review asked for a rename and tests.",
                    ),
                ],
            },
        ],
    },
    {
        "name": "incident",
        "turns": [
            ("user", "We had an outage last night: {service} returned 503 for 40 minutes."),
            ("assistant", "What do the logs show right before the first 503?"),
            (
                "user",
                "Connection pool exhausted. {service} holds a connection while it calls {upstream} and {upstream} was timing out after 30 s.",
            ),
            (
                "assistant",
                "So the root cause is holding a pooled connection across a slow external call. Release the connection before calling {upstream} and set a 3 s client timeout with a circuit breaker.",
            ),
            (
                "user",
                "Postmortem action items: move the {upstream} call outside the transaction, 3 s timeout, breaker opens after 5 failures, alert when pool usage > 80 %.",
            ),
            (
                "assistant",
                "Add a runbook entry too: first check pool saturation on the {service} dashboard.",
            ),
        ],
        "questions": [
            {"q": "what was behind the 503s during last night's outage?", "evidence": [2, 3]},
            {"q": "list the action items we agreed after the incident", "evidence": [4]},
            {
                "q": "what's the first thing on-call should look at if it happens again?",
                "evidence": [5],
            },
            {
                "q": "what timeout did we settle on for that call?",
                "evidence": [3, 4],
                "context": [
                    ("user", "the {service} outage, which dependency was involved?"),
                    ("assistant", "{service} held pooled connections while calling {upstream}."),
                ],
            },
        ],
    },
    {
        "name": "dependency_upgrade",
        "turns": [
            ("user", "Upgrading {lib} from {old_ver} to {new_ver} breaks the build."),
            ("assistant", "Which error? {new_ver} removed a couple of deprecated APIs."),
            ("user", "{removed_api} no longer exists."),
            (
                "assistant",
                "It was replaced by {new_api}. The signature differs: it takes a config object instead of keyword arguments.",
            ),
            (
                "user",
                "Migrated the three call sites to {new_api}, tests pass. Pinning {lib} to ~={new_ver} in the lock file.",
            ),
        ],
        "questions": [
            {"q": "what broke when we bumped {lib}?", "evidence": [2, 3]},
            {"q": "what replaces the API that was removed?", "evidence": [3]},
            {
                "q": "and how is it pinned now?",
                "evidence": [4],
                "context": [
                    ("user", "did the {lib} upgrade go through?"),
                    ("assistant", "Yes, {lib} moved to {new_ver} after migrating the call sites."),
                ],
            },
        ],
    },
    {
        "name": "migration_order",
        "turns": [
            (
                "user",
                "We need to split the {column} column of {table2} into two columns without downtime.",
            ),
            (
                "assistant",
                "Expand and contract: add the new nullable columns, dual-write from the app, backfill in batches, switch reads, then drop the old column in a later release.",
            ),
            ("user", "How big should the backfill batches be? {table2} has {rows} rows."),
            (
                "assistant",
                "Batches of 5,000 rows ordered by primary key, sleeping 100 ms between batches, so replication lag stays under a second.",
            ),
            ("user", "And the old column, when exactly can it go?"),
            (
                "assistant",
                "Only after one full release where nothing reads it; keep the drop in its own migration so a rollback of the app never needs it back.",
            ),
        ],
        "questions": [
            {
                "q": "how do we restructure {column} without taking the service down?",
                "evidence": [1],
            },
            {"q": "what chunk size did we pick for filling the new fields?", "evidence": [3]},
            {
                "q": "so which comes first, the backfill or switching reads?",
                "evidence": [1],
                "context": [
                    ("user", "the {column} split on {table2}, what are the steps?"),
                    (
                        "assistant",
                        "Expand and contract on {table2}: new columns, dual-write, backfill, then the drop.",
                    ),
                ],
            },
            {
                "q": "when is it safe to remove it?",
                "evidence": [5],
                "context": [
                    ("user", "we are splitting {column} into two columns"),
                    ("assistant", "Right, the old {column} column stays until the contract step."),
                ],
            },
        ],
    },
    {
        "name": "pagination",
        "turns": [
            ("user", "{list_endpoint} needs paging. Offset and limit is the quickest, right?"),
            (
                "assistant",
                "Quickest, but offsets skip or repeat items when rows are inserted while a client pages, and deep offsets get slow. A cursor over ({sort_key}, id) avoids both.",
            ),
            (
                "user",
                "Clients only ever go forward, so cursor it is. Should the cursor be readable?",
            ),
            (
                "assistant",
                "Make it opaque: base64 of the last ({sort_key}, id) pair, so you can change the encoding later without breaking clients.",
            ),
            (
                "user",
                "decision: {list_endpoint} uses opaque cursor pagination on ({sort_key}, id), default page size 50, max 200.",
            ),
        ],
        "questions": [
            {"q": "why not simple offset paging for {list_endpoint}?", "evidence": [1]},
            {"q": "what is the biggest page a client may request?", "evidence": [4]},
            {
                "q": "and why is it opaque?",
                "evidence": [3],
                "context": [
                    ("user", "how does paging work on {list_endpoint}?"),
                    ("assistant", "{list_endpoint} uses a cursor over ({sort_key}, id)."),
                ],
            },
        ],
    },
    {
        "name": "ci_cache",
        "turns": [
            (
                "user",
                "The CI pipeline takes {ci_minutes} minutes, most of it installing dependencies.",
            ),
            (
                "assistant",
                "Cache the package store keyed on the hash of the lock file, and split the slow {slow_suite} suite into its own parallel job.",
            ),
            ("user", "Cache hit rate is 90 % now, but {slow_suite} alone still takes 9 minutes."),
            (
                "assistant",
                "Shard {slow_suite} four ways by test file timing; most runners support splitting by historical durations.",
            ),
            ("user", "With four shards the whole pipeline is down to 6 minutes."),
        ],
        "questions": [
            {"q": "how did we speed up dependency installation in the build?", "evidence": [1]},
            {"q": "how long does a full run take now?", "evidence": [4]},
            {
                "q": "how many pieces did we split it into?",
                "evidence": [3, 4],
                "context": [
                    ("user", "the {slow_suite} suite was the slow part of CI, right?"),
                    (
                        "assistant",
                        "Yes, {slow_suite} took 9 minutes on its own even with the cache.",
                    ),
                ],
            },
        ],
    },
    {
        "name": "preference",
        "turns": [
            ("user", "preference: {pref_1}"),
            ("assistant", "Noted, I'll follow that from now on."),
            ("user", "Also, {pref_2}"),
            ("assistant", "Understood, I'll keep that in mind for every change."),
        ],
        "questions": [
            {"q": "{pref_q1}", "evidence": [0]},
            {"q": "{pref_q2}", "evidence": [2]},
        ],
    },
    {
        "name": "terminology",
        "turns": [
            ("user", 'terminology: in this project a "{term}" means {term_def}.'),
            ("assistant", 'Got it, I\'ll use "{term}" in that sense.'),
            ("user", 'And "{term2}" is {term2_def}, don\'t confuse the two.'),
        ],
        "questions": [
            {"q": "{term_q}", "evidence": [0]},
            {
                "q": "and the other one, how is it different?",
                "evidence": [2],
                "context": [
                    ("user", "what do we mean by {term} here?"),
                    ("assistant", "A {term} is {term_def}."),
                ],
            },
        ],
    },
    {
        "name": "config",
        "turns": [
            ("user", "Where do we configure the {setting_topic}?"),
            (
                "assistant",
                "It's {setting_name} in {config_file}; the default is {setting_default}.",
            ),
            (
                "user",
                "Production needs more headroom, we keep hitting it during the nightly batch.",
            ),
            (
                "assistant",
                "Raise {setting_name} to {setting_prod} in the production overlay only, and alert when usage exceeds 80 % of it.",
            ),
        ],
        "questions": [
            {
                "q": "which knob controls the {setting_topic} and where does it live?",
                "evidence": [1],
            },
            {
                "q": "what value did we give it for prod?",
                "evidence": [3],
                "context": [
                    ("user", "the {setting_topic} limit kept being hit"),
                    ("assistant", "That is {setting_name}, default {setting_default}."),
                ],
            },
        ],
    },
    {
        "name": "secrets",
        "turns": [
            (
                "user",
                "A {token_kind} got committed to a branch by accident. It never reached main.",
            ),
            (
                "assistant",
                "Treat it as leaked anyway: revoke it now, then rewrite the branch history. Force-pushing alone does not help if anyone fetched it.",
            ),
            ("user", "Revoked and rotated. How do we stop this from happening again?"),
            (
                "assistant",
                "Add a pre-commit hook running {scanner}, and the same scan as a required CI check so a skipped hook still gets caught.",
            ),
        ],
        "questions": [
            {
                "q": "what did we do right after the credential was pushed by mistake?",
                "evidence": [1, 2],
            },
            {"q": "which tool scans for leaked keys before commits?", "evidence": [3]},
        ],
    },
    {
        "name": "logging",
        "turns": [
            (
                "user",
                "Our logs are way too noisy, {noisy_source} writes a line for every {noisy_event}.",
            ),
            (
                "assistant",
                "Drop those to DEBUG and emit a counter metric instead; logs should describe events a human needs to read.",
            ),
            ("user", "What should the metric be called?"),
            (
                "assistant",
                "{metric_name}, a counter with a status label; follow the existing unit-suffix convention.",
            ),
            ("user", "Also decided that log lines must never include request bodies, only ids."),
        ],
        "questions": [
            {"q": "how did we deal with the log spam?", "evidence": [1]},
            {"q": "what's the name of the counter that replaced those lines?", "evidence": [3]},
            {"q": "what must never appear in a log line?", "evidence": [4]},
        ],
    },
    {
        "name": "release",
        "turns": [
            ("user", "How do we cut a release of {product}?"),
            (
                "assistant",
                "Create a branch release/{version_fmt} from main, freeze it, and only cherry-pick fixes into it.",
            ),
            ("user", "Who signs off?"),
            (
                "assistant",
                "{approver} approves the release checklist; the changelog is generated from conventional commit messages with {changelog_tool}.",
            ),
            ("user", "decision: releases of {product} go out on {release_day}, never on Fridays."),
        ],
        "questions": [
            {"q": "what naming scheme do our release branches follow?", "evidence": [1]},
            {"q": "who gives the final go before shipping?", "evidence": [3]},
            {"q": "on which weekday do we ship?", "evidence": [4]},
            {
                "q": "and how is its changelog produced?",
                "evidence": [3],
                "context": [
                    ("user", "how do we release {product}?"),
                    ("assistant", "A release/{version_fmt} branch is cut from main and frozen."),
                ],
            },
        ],
    },
    {
        "name": "rollout",
        "turns": [
            ("user", "We want to roll out {flag_feature} gradually."),
            (
                "assistant",
                "Put it behind a feature flag in {flag_system}, start at 5 % of {flag_unit}, watch the error rate for a day, then double.",
            ),
            ("user", "What if something goes wrong at 20 %?"),
            (
                "assistant",
                "Flip the flag off; no deploy needed. Keep the old code path until the flag has been at 100 % for two weeks.",
            ),
            ("user", "Flag is named {flag_name}, owner is me, cleanup ticket {ticket} filed."),
        ],
        "questions": [
            {"q": "how are we exposing {flag_feature} to people step by step?", "evidence": [1]},
            {"q": "how do we back out quickly if the launch misbehaves?", "evidence": [3]},
            {"q": "which toggle guards {flag_feature} and who owns it?", "evidence": [4]},
            {
                "q": "when can the old path be deleted?",
                "evidence": [3],
                "context": [
                    ("user", "the gradual launch of {flag_feature}, where are we?"),
                    ("assistant", "{flag_feature} is behind {flag_name} in {flag_system}."),
                ],
            },
        ],
    },
]
