"""Our ontology, declared once: the entity and relation types of developer chat memory.

Bump :data:`ONTOLOGY_VERSION` on any change that alters labels, relationship types,
domains or ranges, then regenerate ``ontology.ttl`` with
``python ops/ontology_export.py``.
"""

from __future__ import annotations

from turngraph.schemas.ontology.model import EntityType, Ontology, RelationType

__all__ = [
    "ANY", "CODE", "DIRECTIVES", "ENTITY_TYPES", "IDEAS", "ONTOLOGY", "ONTOLOGY_VERSION",
    "RELATION_TYPES", "RUNTIME", "SUBJECTS", "TROUBLE", "WORK", "E", "R",
]  # fmt: skip

ONTOLOGY_VERSION = 2
"""Bumped on any change of the types below; exported as the TTL's ``owl:versionInfo``."""

E = EntityType

ENTITY_TYPES: tuple[EntityType, ...] = (
    E(
        "Repository",
        "A source code repository, e.g. owner/name on GitHub.",
        ("Repo", "Project", "Codebase"),
        ("getzep/graphiti",),
    ),
    E(
        "Branch",
        "A git branch.",
        ("GitBranch",),
        ("main", "feature/recall-cache"),
        case_sensitive=True,
    ),
    E(
        "Commit",
        "A git commit, named by its hash (7 to 40 hex digits).",
        ("Sha", "Changeset", "Revision"),
        ("3f9c2ab",),
    ),
    E(
        "PullRequest",
        "A pull or merge request, named #N or owner/repo#N.",
        ("PR", "MergeRequest", "MR"),
        ("#45",),
    ),
    E(
        "Issue",
        "An issue or ticket in a tracker, named #N or owner/repo#N.",
        ("Ticket", "Bug", "BugReport"),
        ("#123",),
    ),
    E(
        "File",
        "A file or directory path in a repository.",
        ("Path", "Directory", "Module"),
        ("workers/ingest/job.py",),
        case_sensitive=True,
    ),
    E(
        "Symbol",
        "A code symbol: function, class, method, variable, constant.",
        ("Function", "Class", "Method", "Variable", "Identifier"),
        ("build_extractor",),
        case_sensitive=True,
    ),
    E(
        "Decision",
        "A choice the team made; its subject lets a later decision supersede it.",
        ("Choice", "DecisionRecord", "ADR"),
        ("use Valkey for the embedded Redis",),
    ),
    E(
        "Task",
        "A piece of work to do, a todo or next step.",
        ("Todo", "Action", "NextStep"),
        ("add a uniqueness constraint per label",),
    ),
    E(
        "Incident",
        "Something that went wrong in a running system: outage, regression.",
        ("Outage", "Regression", "Postmortem"),
        ("ingest workers stalled on Redis OOM",),
    ),
    E(
        "Tool",
        "A developer tool, library or CLI.",
        ("Library", "Framework", "Cli", "Package"),
        ("pytest", "ruff"),
    ),
    E(
        "Service",
        "A running service or platform a system depends on.",
        ("Database", "Platform", "Server", "Api"),
        ("Redis", "Neo4j", "GitHub"),
    ),
    E(
        "Topic",
        "A subject area of the conversation.",
        ("Subject", "Theme", "Area"),
        ("recall latency",),
    ),
    E(
        "Concept",
        "A technical concept or idea.",
        ("Idea", "Pattern", "Principle"),
        ("at-least-once delivery",),
    ),
    E(
        "Problem",
        "An error or difficulty someone describes.",
        ("Error", "Failure", "Symptom"),
        ("ConstraintValidationFailed under concurrent MERGE",),
    ),
    E(
        "Solution",
        "A fix or approach proposed for a problem.",
        ("Fix", "Workaround", "Answer"),
        ("retry the MERGE on constraint conflicts",),
    ),
    E("Question", "A question someone asks.", ("Query", "Ask"), ("why is recall slow?",)),
    E(
        "Person",
        "A person: a user, a developer, a reviewer, someone named in conversation.",
        ("User", "Developer", "Author", "Reviewer", "Actor"),
        ("alice",),
    ),
    E(
        "Place",
        "A named place: a city, country, region, landmark or venue.",
        ("Location", "City", "Country", "Venue", "Landmark"),
        ("Lisbon",),
    ),
    E(
        "Organization",
        "A named organisation: a company, school, team, club, store or agency.",
        ("Company", "Organisation", "Employer", "School", "Team"),
        ("Red Cross",),
    ),
    E(
        "Event",
        "A named event or occasion: a holiday, festival, game, conference.",
        ("Occasion", "Holiday", "Festival", "Celebration"),
        ("Thanksgiving",),
    ),
    E(
        "Preference",
        "How someone likes things done (a memory directive).",
        ("Style", "Convention"),
        ("use ruff format, not black",),
    ),
    E(
        "Procedure",
        "How to do something, step by step (a memory directive).",
        ("Runbook", "HowTo", "Recipe", "ProcedureStep"),
        ("release: tag, build, publish",),
    ),
    E(
        "LessonLearned",
        "Something learned the hard way (a memory directive).",
        ("Lesson", "Learning", "Insight"),
        ("never pickle RQ payloads",),
    ),
    E(
        "Terminology",
        "A term and what it means here (a memory directive).",
        ("Term", "Glossary", "Definition", "Alias"),
        ("turn = one chat message",),
    ),
    E(
        "Plan",
        "A plan, phase or milestone, often with an id (PLAN-12, plan 10.2, Phase 3).",
        ("Milestone", "Phase", "Roadmap", "Epic"),
        ("PLAN-12",),
    ),
    E(
        "Url",
        "A web address (credentials removed).",
        ("Link", "Uri", "WebPage"),
        ("https://github.com/rq/rq/issues/435",),
        case_sensitive=True,
    ),
)

CODE = frozenset({"Repository", "Branch", "Commit", "PullRequest", "Issue", "File", "Symbol"})
DIRECTIVES = frozenset({"Decision", "Preference", "Procedure", "LessonLearned", "Terminology"})
"""Statement types: what a memory directive (``decision:``, ``preference:`` ...) or a stated
decision becomes. They are memories in their own right, recalled beside the turns."""
WORK = frozenset({"Task", "Plan", "Issue", "PullRequest"})
TROUBLE = frozenset({"Problem", "Incident", "Issue", "Question"})
RUNTIME = frozenset({"Tool", "Service"})
IDEAS = frozenset({"Topic", "Concept"})
ANY = frozenset(t.name for t in ENTITY_TYPES)
SUBJECTS = CODE | WORK | RUNTIME | IDEAS | TROUBLE | {"Url"}
"""What a decision or directive can be about."""

R = RelationType

RELATION_TYPES: tuple[RelationType, ...] = (
    R(
        "APPLIES_TO",
        "A decision, preference, lesson, procedure or term applies to something.",
        DIRECTIVES,
        SUBJECTS,
        ("CONCERNS", "ABOUT", "SCOPED_TO"),
    ),
    R(
        "OWNS",
        "A person owns or maintains something.",
        frozenset({"Person"}),
        CODE | WORK | RUNTIME,
        ("MAINTAINS",),
    ),
    R(
        "HAPPENED_ON",
        "An incident or problem happened on a branch, commit, service or file.",
        frozenset({"Incident", "Problem"}),
        CODE | {"Service"},
        ("OCCURRED_ON", "OCCURRED_IN"),
    ),
    R(
        "MODIFIES",
        "A commit, pull request or task changes a file or symbol.",
        frozenset({"Commit", "PullRequest", "Task", "Branch"}),
        frozenset({"File", "Symbol"}),
        ("CHANGES", "TOUCHES", "EDITS"),
    ),
    R(
        "IMPLEMENTS",
        "Code work implements a task, issue, plan, decision or solution.",
        frozenset({"PullRequest", "Commit", "Branch", "Symbol", "File"}),
        frozenset({"Task", "Issue", "Plan", "Decision", "Solution", "Concept"}),
        ("REALIZES",),
    ),
    R("BLOCKS", "Work item A blocks work item B.", WORK | TROUBLE, WORK),
    R(
        "DEPENDS_ON",
        "A depends on B.",
        WORK | CODE | RUNTIME,
        WORK | CODE | RUNTIME,
        ("REQUIRES", "NEEDS", "PREREQUISITE_FOR"),
    ),
    R(
        "USES_TOOL",
        "A procedure, task, solution, person or codebase uses a tool or service.",
        frozenset(
            {
                "Procedure", "Task", "Solution", "Person", "Repository", "Service", "Tool", "Plan",
                "Decision",
            }
        ),
        RUNTIME,
        ("USES",),
    ),
    R(
        "PREFERS",
        "A person prefers a tool, style or way of working.",
        frozenset({"Person"}),
        RUNTIME | IDEAS | {"Preference", "Procedure"},
        ("LIKES",),
    ),
    R("ALIAS_OF", "Another name for the same thing.", ANY, ANY, ("SAME_AS", "AKA"), symmetric=True),
    R(
        "TERMINOLOGY_FOR",
        "A term names or defines something.",
        frozenset({"Terminology"}),
        ANY - {"Terminology"},
        ("DEFINES", "NAMES"),
    ),
    R(
        "FOLLOWS",
        "A step, task or plan comes after another.",
        frozenset({"Procedure", "Task", "Plan"}),
        frozenset({"Procedure", "Task", "Plan"}),
        ("AFTER", "NEXT_STEP_OF", "FOLLOWS_UP"),
    ),
    R(
        "AUTHORED",
        "A person wrote or created something.",
        frozenset({"Person"}),
        CODE | WORK | DIRECTIVES | {"Solution", "Question"},
        ("CREATED", "WROTE", "OPENED"),
    ),
    R("MENTIONS", "Something refers to something else.", ANY, ANY, ("REFERENCES", "CITES")),
    R("HAS_TOPIC", "Something is about a topic.", ANY, frozenset({"Topic"}), ("ABOUT_TOPIC",)),
    R(
        "SOLVES",
        "A solution or change solves a problem, incident, issue or question.",
        frozenset({"Solution", "Commit", "PullRequest", "Decision", "Procedure"}),
        TROUBLE,
        ("FIXES", "RESOLVES", "ADDRESSES", "ANSWERS", "CLOSES"),
    ),
    R(
        "PROPOSES",
        "Someone or something proposes a solution, decision, plan or task.",
        frozenset({"Person", "PullRequest", "Issue", "Plan", "Question"}),
        frozenset({"Solution", "Decision", "Plan", "Task"}),
        ("SUGGESTS",),
    ),
    R(
        "IMPACTS",
        "A decision, incident or change affects something.",
        frozenset({"Decision", "Incident", "Problem", "Commit", "PullRequest", "Plan"}),
        ANY - DIRECTIVES,
        ("AFFECTS",),
    ),
    R(
        "SUPERSEDES",
        "A newer decision, preference, procedure, term or plan replaces an older one.",
        DIRECTIVES | {"Plan"},
        DIRECTIVES | {"Plan"},
        ("REPLACES", "OVERRIDES"),
    ),
    R(
        "CAUSED_BY",
        "A problem or incident was caused by something.",
        frozenset({"Problem", "Incident"}),
        ANY - DIRECTIVES - {"Person", "Question"},
        ("DUE_TO", "RESULTS_FROM"),
    ),
    R(
        "PART_OF",
        "Something belongs to a larger whole (file of a repo, task of a plan).",
        CODE | WORK | {"Procedure"},
        CODE | WORK | {"Procedure", "Service"},
        ("BELONGS_TO", "IN", "CONTAINED_IN"),
    ),
    R(
        "RELATED_TO",
        "A loose association when nothing more specific fits.",
        ANY,
        ANY,
        ("RELATES_TO", "ASSOCIATED_WITH", "LINKED_TO"),
        symmetric=True,
    ),
)  # fmt: skip

ONTOLOGY = Ontology(
    version=ONTOLOGY_VERSION, entity_types=ENTITY_TYPES, relation_types=RELATION_TYPES
)
"""The one ontology everything is generated from."""
