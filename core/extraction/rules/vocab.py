"""The vocabulary both rule sets share: the tool lexicon and the names of languages. Pure: no I/O.

- `find_tools(text)` -> the known tools named in `text`, with their spans, in order. Tool names glued to CJK
  text ("项目用PG") match too; aliases that are also common words count only in their own spelling ("Go").
- `is_tool(text)`: `text` is exactly one of the lexicon's names (the name and place rules reject those).
- A `Tool` has one canonical spelling (its slot's value), a display name for content, its slot (None
  where several can be in use at once), and how the text named it (`said`: "PG", "飞书").
- `LANGUAGE_CODES`: a language's name, in English or Chinese, -> its code ("mandarin" / "中文" -> "zh").
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple


class Tool(NamedTuple):
    canonical: str  # the slot value: lower-case, one spelling per tool ("postgresql" for "PG")
    display: str  # how content names it
    slot: str | None  # None: several can be in use at once (docker, redis, ...)
    said: str = ""  # how the text named it ("PG", "飞书", "k8s"), when found in a text


# One line per slot: `canonical[=Display][(alias|alias)]`; "_" stands for a space. "-" means no slot.
_TOOL_LEXICON = """
project.runtime: node.js=Node.js(node.js|nodejs|node) deno=Deno
project.package_manager: pnpm npm yarn=Yarn bun=Bun pip(pip|pip3) poetry=Poetry uv pipenv=Pipenv
    conda=Conda(conda|miniconda) cargo=Cargo composer=Composer bundler=Bundler
project.database: postgresql=PostgreSQL(postgresql|postgres|postgre|pg|pgsql) mysql=MySQL mariadb=MariaDB
    sqlite=SQLite(sqlite|sqlite3) mongodb=MongoDB(mongodb|mongo) oracle=Oracle(oracle_db) dynamodb=DynamoDB
    redshift=Redshift dameng=DM(达梦) opengauss=openGauss polardb=PolarDB
    sql_server=SQL_Server(sql_server|sqlserver|mssql) clickhouse=ClickHouse cockroachdb=CockroachDB
    cassandra=Cassandra supabase=Supabase firebase=Firebase(firebase|firestore) neo4j=Neo4j tidb=TiDB
    duckdb=DuckDB snowflake=Snowflake bigquery=BigQuery timescaledb=TimescaleDB oceanbase=OceanBase
    planetscale=PlanetScale aurora=Aurora
project.language: python=Python(python|python3) typescript=TypeScript(typescript|ts) go=Go(golang|go)
    javascript=JavaScript(javascript|js) rust=Rust java=Java(java|jdk|openjdk) kotlin=Kotlin c#=C#(c#|csharp)
    c++=C++(c++|cpp)
    ruby=Ruby php=PHP swift=Swift scala=Scala elixir=Elixir dart=Dart haskell=Haskell clojure=Clojure
    ocaml=OCaml zig=Zig lua=Lua perl=Perl julia=Julia erlang=Erlang f#=F#(f#|fsharp)
project.framework: react=React(react|reactjs|react.js) vue=Vue(vue|vuejs|vue.js|vue3|vue2) angular=Angular
    svelte=Svelte(svelte|sveltekit) next.js=Next.js(next.js|nextjs) nuxt=Nuxt(nuxt|nuxtjs|nuxt.js)
    django=Django flask=Flask fastapi=FastAPI rails=Rails(ruby_on_rails|rails) laravel=Laravel flutter=Flutter
    spring_boot=Spring_Boot(spring_boot|springboot|spring) express=Express(express.js|expressjs|express)
    nestjs=NestJS(nestjs|nest.js) remix=Remix astro=Astro solidjs=SolidJS(solidjs|solid.js) gin=Gin
    phoenix=Phoenix axum=Axum actix=Actix(actix|actix-web) asp.net=ASP.NET(asp.net|asp.net_core|.net_core)
    react_native=React_Native(react_native|rn) electron=Electron tauri=Tauri swiftui=SwiftUI
    jetpack_compose=Jetpack_Compose uni-app=uni-app(uni-app|uniapp) taro=Taro htmx=htmx qt=Qt fastify=Fastify
    koa=Koa hono=Hono
project.test_framework: pytest jest=Jest vitest=Vitest mocha=Mocha junit=JUnit rspec=RSpec unittest
project.orm: sqlalchemy=SQLAlchemy prisma=Prisma typeorm=TypeORM drizzle=Drizzle hibernate=Hibernate
    gorm=GORM sequelize=Sequelize mongoose=Mongoose mybatis=MyBatis sqlmodel=SQLModel
    mybatis-plus=MyBatis-Plus(mybatis-plus|mybatis_plus|mybatisplus)
    activerecord=ActiveRecord(activerecord|active_record) ent=ent(entgo)
project.bundler: vite=Vite webpack esbuild rollup=Rollup turbopack=Turbopack parcel=Parcel rsbuild=Rsbuild rspack=Rspack
project.iac: terraform=Terraform opentofu=OpenTofu pulumi=Pulumi cloudformation=CloudFormation aws_cdk=AWS_CDK(aws_cdk)
    crossplane=Crossplane
project.build_tool: maven=Maven gradle=Gradle bazel=Bazel cmake=CMake turborepo=Turborepo nx=Nx
project.ci: github_actions=GitHub_Actions(github_actions|gh_actions|github_action) buildkite=Buildkite
    jenkins=Jenkins circleci=CircleCI(circleci|circle_ci) gitlab_ci=GitLab_CI(gitlab_ci)
    travis_ci=Travis_CI(travis|travis_ci) drone=Drone(drone|drone_ci) teamcity=TeamCity argo_workflows=Argo_Workflows
    woodpecker=Woodpecker(woodpecker|woodpecker_ci) concourse=Concourse(concourse_ci) bamboo=Bamboo
    bitbucket_pipelines=Bitbucket_Pipelines azure_pipelines=Azure_Pipelines(azure_pipelines|azure_devops)
    yunxiao=云效(云效|yunxiao)
project.hosting: vercel=Vercel netlify=Netlify heroku=Heroku fly.io=Fly.io(fly.io|flyio) render=Render
    railway=Railway cloudflare=Cloudflare(cloudflare|cloudflare_workers|cloudflare_pages) hetzner=Hetzner
    digitalocean=DigitalOcean(digitalocean|digital_ocean) linode=Linode ec2=EC2
    cloud_run=Cloud_Run app_engine=App_Engine eks=EKS gke=GKE aks=AKS lambda=AWS_Lambda(aws_lambda)
    ovh=OVH vultr=Vultr github_pages=GitHub_Pages(github_pages|gh_pages) firebase_hosting=Firebase_Hosting
    coolify=Coolify dokku=Dokku rds=RDS(rds|aws_rds|amazon_rds) cloud_sql=Cloud_SQL
project.orchestration: kubernetes=Kubernetes(kubernetes|k8s|k3s) ecs=ECS(ecs|aws_ecs|fargate) nomad=Nomad
    docker_swarm=Docker_Swarm(docker_swarm|swarm) docker_compose=Docker_Compose(docker_compose|docker-compose)
    openshift=OpenShift ack=ACK cce=CCE tke=TKE
project.cloud: aws=AWS gcp=GCP(gcp|google_cloud) azure=Azure aliyun=Alibaba_Cloud(aliyun|alibaba_cloud|阿里云)
    tencent_cloud=Tencent_Cloud(tencent_cloud|腾讯云) huawei_cloud=Huawei_Cloud(huawei_cloud|华为云)
    volcengine=火山引擎(火山引擎|volcengine|volcano_engine)
project.tracker: jira=Jira linear=Linear trello=Trello asana=Asana youtrack=YouTrack zentao=ZenTao(zentao|禅道)
    clickup=ClickUp shortcut=Shortcut tapd=TAPD(tapd) pingcode=PingCode
project.chat: slack=Slack microsoft_teams=Microsoft_Teams(microsoft_teams|ms_teams) discord=Discord
    feishu=Feishu(feishu|lark|飞书) dingtalk=DingTalk(dingtalk|钉钉) wecom=WeCom(wecom|企业微信|企微)
project.monitoring: prometheus=Prometheus zabbix=Zabbix new_relic=New_Relic(new_relic|newrelic)
    nagios=Nagios datadog=Datadog grafana=Grafana(grafana|grafana_cloud) nightingale=夜莺(夜莺|nightingale)
    honeycomb=Honeycomb signoz=SigNoz dynatrace=Dynatrace lightstep=Lightstep appdynamics=AppDynamics
project.api_gateway: kong=Kong tyk=Tyk apisix=APISIX(apisix|apache_apisix) apigee=Apigee
    krakend=KrakenD(krakend)
project.dns: route_53=Route_53(route_53|route53|aws_route_53) dnspod=DNSPod(dnspod) namecheap=Namecheap
    ns1=NS1 dnsimple=DNSimple
project.paging: pagerduty=PagerDuty opsgenie=Opsgenie incident.io=incident.io(incident.io) victorops=VictorOps
project.error_tracking: sentry=Sentry rollbar=Rollbar bugsnag=Bugsnag honeybadger=Honeybadger raygun=Raygun
project.state_management: redux=Redux(redux|redux_toolkit|rtk) zustand=Zustand mobx=MobX pinia=Pinia vuex=Vuex
    jotai=Jotai recoil=Recoil ngrx=NgRx
project.ml_framework: pytorch=PyTorch(pytorch|torch) tensorflow=TensorFlow jax=JAX keras=Keras mxnet=MXNet
    paddlepaddle=PaddlePaddle(paddlepaddle|paddle|飞桨) mindspore=MindSpore
project.code_hosting: github=GitHub gitlab=GitLab bitbucket=Bitbucket gitea=Gitea gitee=Gitee(gitee|码云)
    codeberg=Codeberg svn=SVN(svn|subversion)
project.cd: argocd=Argo_CD(argocd|argo_cd|argo) flux=Flux(flux|fluxcd) spinnaker=Spinnaker octopus=Octopus_Deploy
project.registry: docker_hub=Docker_Hub(docker_hub|dockerhub) ghcr=GHCR(ghcr|ghcr.io|github_container_registry)
    ecr=ECR(ecr|aws_ecr) harbor=Harbor(harbor) quay=Quay(quay|quay.io) acr=ACR swr=SWR gcr=GCR(gcr|gcr.io)
    artifact_registry=Artifact_Registry
project.workflow: airflow=Airflow(airflow|apache_airflow) dagster=Dagster prefect=Prefect
    dolphinscheduler=DolphinScheduler(dolphinscheduler|dolphin_scheduler) temporal=Temporal luigi=Luigi
    argo_events=Argo_Events
project.storage: s3=S3(s3|aws_s3) oss=OSS(oss|aliyun_oss) minio=MinIO r2=R2(r2|cloudflare_r2)
    backblaze=Backblaze(backblaze|backblaze_b2|b2) wasabi=Wasabi gcs=GCS(gcs|google_cloud_storage) cos=COS(cos)
    azure_blob=Azure_Blob(azure_blob|azure_blob_storage) qiniu=七牛(七牛|七牛云|qiniu)
project.logging: winston=Winston pino=Pino bunyan=Bunyan loguru=Loguru logrus=Logrus log4j=Log4j(log4j|log4j2)
    logback=Logback serilog=Serilog nlog=NLog
user.container_runtime: docker_desktop=Docker_Desktop orbstack=OrbStack colima=Colima
    podman=Podman(podman|podman_desktop) rancher_desktop=Rancher_Desktop
user.shell: bash=Bash zsh=Zsh(zsh|oh-my-zsh|oh_my_zsh) fish=Fish(fish|fish_shell) powershell=PowerShell(powershell|pwsh)
    nushell=Nushell(nushell|nu_shell)
project.linter: eslint=ESLint biome=Biome oxlint=Oxlint flake8=Flake8 pylint=Pylint rubocop=RuboCop
    golangci-lint=golangci-lint(golangci-lint|golangci) tslint=TSLint ruff=Ruff
    black=Black isort=isort
project.search: elasticsearch=Elasticsearch(elasticsearch|elastic_search|es_cluster) opensearch=OpenSearch
    meilisearch=Meilisearch typesense=Typesense solr=Solr(solr|apache_solr) algolia=Algolia
project.api_docs: swagger_ui=Swagger_UI(swagger_ui|swagger) redoc=Redoc(redoc|redocly) scalar=Scalar
    stoplight=Stoplight rapidoc=RapiDoc
user.browser: chrome=Chrome(chrome|google_chrome) firefox=Firefox safari=Safari arc=Arc(arc|arc_browser)
    edge=Edge(edge|microsoft_edge) brave=Brave vivaldi=Vivaldi chromium=Chromium
project.cache: redis=Redis(redis|valkey) memcached=Memcached dragonfly=Dragonfly(dragonflydb)
project.queue: kafka=Kafka rabbitmq=RabbitMQ sqs=SQS(sqs|aws_sqs) nats=NATS pulsar=Pulsar
    rocketmq=RocketMQ
user.editor: vim=Vim neovim=Neovim(neovim|nvim) emacs=Emacs pycharm=PyCharm intellij=IntelliJ(intellij|idea)
    vscode=VS_Code(vscode|vs_code|visual_studio_code) sublime=Sublime_Text(sublime|sublime_text)
    cursor=Cursor zed=Zed helix=Helix xcode=Xcode webstorm=WebStorm goland=GoLand
    android_studio=Android_Studio visual_studio=Visual_Studio
user.phone: iphone=iPhone pixel=Pixel galaxy=Samsung_Galaxy(galaxy|samsung_galaxy) huawei=Huawei(huawei|华为)
    xiaomi=Xiaomi(xiaomi|redmi|小米|红米) oneplus=OnePlus oppo=OPPO vivo=vivo honor=Honor(honor|荣耀)
user.os: macos=macOS(macos|mac|macbook|osx|os_x) linux=Linux windows=Windows ubuntu=Ubuntu
    arch_linux=Arch_Linux(arch_linux|archlinux|arch) fedora=Fedora debian=Debian nixos=NixOS wsl=WSL(wsl|wsl2)
-: docker=Docker
    graphql=GraphQL tailwind=Tailwind_CSS(tailwind|tailwindcss) prettier=Prettier mypy
    celery=Celery nginx
    ansible=Ansible helm=Helm jquery=jQuery
    lodash=Lodash moment.js=Moment.js(moment.js|momentjs) axios=Axios pandas=pandas
    numpy=NumPy storybook=Storybook cypress=Cypress
    playwright=Playwright selenium=Selenium opentelemetry=OpenTelemetry(opentelemetry|otel) vault=Vault
    dbt=dbt(dbt|dbt_core|dbt_cloud) fivetran=Fivetran airbyte=Airbyte spark=Spark(spark|pyspark|spark_sql)
    flink=Flink hive=Hive trino=Trino presto=Presto kafka_connect=Kafka_Connect debezium=Debezium
    rancher=Rancher notion=Notion confluence=Confluence obsidian=Obsidian figma=Figma postman=Postman
    proxmox=Proxmox(proxmox|proxmox_ve) unraid=Unraid truenas=TrueNAS nextcloud=Nextcloud
    home_assistant=Home_Assistant
    loki=Loki(loki|grafana_loki) elk=ELK(elk|elastic_stack) kibana=Kibana logstash=Logstash jaeger=Jaeger splunk=Splunk
    postgis=PostGIS pgvector=pgvector timescale=Timescale keycloak=Keycloak auth0=Auth0 stripe=Stripe
    grpc=gRPC(grpc) traefik=Traefik caddy=Caddy envoy=Envoy istio=Istio
    jupyter=Jupyter(jupyter|jupyterlab) mlflow=MLflow ray=Ray(ray) dvc=DVC
    wordpress=WordPress hugo=Hugo hexo=Hexo jekyll=Jekyll gatsby=Gatsby
    element_plus=Element_Plus(element_plus|element-plus|element_ui) ant_design=Ant_Design(antd|ant_design)
    mui=MUI(mui|material_ui) shadcn=shadcn/ui(shadcn|shadcn/ui) bootstrap=Bootstrap
"""
_ENTRY_RE = re.compile(r"([^\s=(]+)(?:=([^\s(]+))?(?:\(([^)]*)\))?")


def _load_lexicon(text: str) -> dict[str, Tool]:
    by_alias: dict[str, Tool] = {}
    slot: str | None = None
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            head, line = line.split(":", 1)
            slot = None if head == "-" else head
        for canonical, display, aliases in _ENTRY_RE.findall(line):
            tool = Tool(canonical.replace("_", " "), (display or canonical).replace("_", " "), slot)
            for alias in (aliases or canonical).split("|"):
                by_alias[alias.replace("_", " ")] = tool
    return by_alias


_TOOLS = _load_lexicon(_TOOL_LEXICON)
# A tool's name is a whole token of [A-Za-z0-9_.#+-] ("next.js", "c++", "k8s"), or several separated by one
# space ("github actions"); names in Han characters ("阿里云") are found inside CJK text too ("项目用阿里云").
_TOKEN_RE = re.compile(r"[A-Za-z0-9_.#+-]+")
_MULTI: dict[str, list[tuple[str, ...]]] = {}
for _alias in _TOOLS:
    if " " in _alias and _alias.isascii():
        _words = tuple(_alias.split(" "))
        _MULTI.setdefault(_words[0], []).append(_words)
for _options in _MULTI.values():
    _options.sort(
        key=len, reverse=True
    )  # the longest name first: "visual studio code" before "visual studio"
_HAN_TOOL_RE = re.compile(
    "|".join(re.escape(a) for a in sorted(_TOOLS, key=len, reverse=True) if not a.isascii())
)
# Aliases that are also common words count only in these spellings ("Go", not "go").
_CASE_SENSITIVE = {
    "go": ("Go", "GO"), "mac": ("Mac",), "node": ("Node",), "render": ("Render",), "railway": ("Railway",),
    "cursor": ("Cursor",), "zed": ("Zed",), "linear": ("Linear",), "spring": ("Spring",), "ent": ("ent",),
    "drone": ("Drone",), "lambda": ("Lambda",), "remix": ("Remix",), "phoenix": ("Phoenix",),
    "gin": ("Gin",), "taro": ("Taro",), "vault": ("Vault",), "helix": ("Helix",), "rn": ("RN",),
    "idea": ("IDEA", "Idea"), "arch": ("Arch",), "oss": ("OSS",), "nx": ("Nx",), "travis": ("Travis",),
    "lark": ("Lark",), "discord": ("Discord",), "slack": ("Slack",), "unittest": ("unittest",),
    "poetry": ("Poetry",), "bun": ("Bun",), "express": ("Express",), "jest": ("Jest", "jest"),
    "swarm": ("Swarm",), "flux": ("Flux",), "argo": ("Argo",), "astro": ("Astro",), "parcel": ("Parcel",),
    "aurora": ("Aurora",), "zig": ("Zig",),
    "qt": ("Qt",), "pixel": ("Pixel",), "galaxy": ("Galaxy",), "honor": ("Honor",), "vivo": ("vivo", "Vivo"),
    "harbor": ("Harbor",), "temporal": ("Temporal",), "prefect": ("Prefect",), "luigi": ("Luigi",),
    "spark": ("Spark",), "hive": ("Hive",), "presto": ("Presto",), "notion": ("Notion",), "ray": ("Ray",),
    "loki": ("Loki",), "kong": ("Kong",), "envoy": ("Envoy",), "caddy": ("Caddy",), "hugo": ("Hugo",),
    "shortcut": ("Shortcut",), "bamboo": ("Bamboo",), "concourse": ("Concourse",), "woodpecker": ("Woodpecker",),
    "fish": ("Fish",), "bash": ("Bash", "bash"), "quay": ("Quay",), "wasabi": ("Wasabi",),
    "r2": ("R2",), "b2": ("B2",), "cos": ("COS",), "ack": ("ACK",), "acr": ("ACR",), "swr": ("SWR",),
    "tke": ("TKE",), "cce": ("CCE",), "koa": ("Koa",), "hono": ("Hono",),
    "mui": ("MUI",), "bootstrap": ("Bootstrap",), "stripe": ("Stripe",), "ecr": ("ECR",), "elk": ("ELK",),
    "rancher": ("Rancher",), "flink": ("Flink",), "trino": ("Trino",), "dvc": ("DVC",),
    "arc": ("Arc",), "edge": ("Edge",), "brave": ("Brave",), "chrome": ("Chrome",), "safari": ("Safari",),
    "scalar": ("Scalar",), "swagger": ("Swagger",), "black": ("Black",),
}  # fmt: skip
# A common word is a tool's name, whatever its case, right after a verb or preposition that takes a tool.
_TOOL_CONTEXT_RE = re.compile(
    r"(?:\b(?:use|uses|using|used|to|with|via|on|from|in|install|installed|run|runs|switched\s+to|moved\s+to|"
    r"replaced|replacing|dropped|ditched|"
    r"migrated\s+to|it's|it\s+is|that's|not|everything's|everything\s+is|all\s+on|is\s+now|bumped|upgraded|"
    r"downgraded|pinned)|用|换成|改用|迁到|切到)\s*$",
    re.I,
)
_VERSION_RE = re.compile(
    r"[ \t]?v?(?P<v>\d{1,2}(?:\.\d{1,3}){0,2}(?:\.x)?)(?![\w.%]|\s*(?:%|ms|s\b|gb|mb|k\b|x\b|分钟|秒|个))",
    re.I,
)


# What may stand between a tool and its version: a copula or "version" ("Node 版本是 16", "JDK 是 17", "the Python
# version is 3.12", "Node 已经是 22 了"); a count or a span after the number is no version ("Go 是 2 年前学的").
_VERSION_BRIDGE_RE = re.compile(
    r"(?:\s*的)?\s*(?:版本号?|(?<=\s)version\b)?\s*(?:现在|目前|已经|早就|也|都|still|now|\s)*"
    r"(?:是|为|用的是|(?<=version\s)is|(?<=version)\s*[:=]|(?<=版本)\s*[:：=]|(?<=版本号)\s*[:：=])(?:\s*v(?=\d))?",
    re.I,
)
_NOT_A_VERSION_RE = re.compile(
    r"\s*(?:年|月|天|周|岁|人|次|倍|台|核|位|万|千|百|多|个|块|元|门|种|款|家|条|项|张|times?\b|years?\b|months?\b|days?\b|weeks?\b|"
    r"people\b|hours?\b|of\b|or\b|to\b|-)",
    re.I,
)


# A version right after a common word makes it the tool's name in any case ("node 20 everywhere now", "go 1.22"): a
# dotted version, or a number of two digits that no count or span follows ("go 10 times" is the word)
_COMMON_WORD_VERSION_RE = re.compile(
    r"[ \t]?v?(?:\d{1,2}\.\d{1,3}(?:\.\d{1,3})?|\d{2})(?![\w.%])(?!" + _NOT_A_VERSION_RE.pattern + r"|\s*(?:"
    r"%|ms|s\b|gb|mb|k\b|x\b|km|mi\b|miles?|mins?\b|minutes?|rounds?|laps?|reps?|sets?|steps?|feet|ft\b|meters?|m\b|分钟|秒|个))",
    re.I,
)
_KIND_SUFFIX_RE = re.compile(r"(?<=\w)-(?:based|powered|backed|driven|native|flavou?red|only)$", re.I)


def is_common_word(name: str) -> bool:
    """The tool's name is also an everyday word ("Go", "Render", "Railway"): alone, it may be the word."""
    return name.casefold() in _CASE_SENSITIVE


# "to" before a common word is its infinitive after these ("had to go", "want to go"), not a move to a tool
_INFINITIVE_HEAD_RE = re.compile(
    r"\b(?:have|has|had|having|need|needs|needed|want|wants|wanted|going|gonna|got|able|used|ought|try|tries|tried|"
    r"trying|like|likes|liked|love|loved|hate|hated|decided|plan|plans|planned|forgot|remember|time|way|how|where)"
    r"\s+to\s*$",
    re.I,
)


def _in_tool_context(text: str, start: int) -> bool:
    """A verb or preposition that takes a tool stands right before `start` (`_TOOL_CONTEXT_RE`)."""
    window = text[max(0, start - 24) : start]
    return _TOOL_CONTEXT_RE.search(window) is not None and _INFINITIVE_HEAD_RE.search(window) is None


def find_tools(text: str) -> list[tuple[Tool, int, int]]:
    """Known tools named in `text`, with their spans, in order. A version right after a slotted tool ("Go
    1.22", "Vue 2", "Python 3.12") is part of its value and display, and of its span."""
    return list(_find_tools(text))


@functools.lru_cache(maxsize=4096)  # the rules ask about the same sentence and clauses several times
def _find_tools(text: str) -> tuple[tuple[Tool, int, int], ...]:
    found = []
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    if "-" in text:  # "Nx-based", "Postgres-backed": the tool before a suffix of kind
        tokens = [
            (token[: m.start()], start, start + m.start())
            if (m := _KIND_SUFFIX_RE.search(token))
            else (token, start, end)
            for token, start, end in tokens
        ]
    skip_to = 0
    for index, (_token, start, _end) in enumerate(tokens):
        if start < skip_to:
            continue
        hit = _name_at(text, tokens, index)
        if hit is None:
            continue
        alias, start, end = hit
        skip_to = end
        common_word = alias in _CASE_SENSITIVE and text[start:end] not in _CASE_SENSITIVE[alias]
        if common_word and not _COMMON_WORD_VERSION_RE.match(text, end) and not _in_tool_context(text, start):
            continue  # "poetry class" is not Poetry; "switched to poetry" and "node 20 everywhere" are
        found.append(_versioned(_TOOLS[alias], text, start, end))
    if not text.isascii():
        found += [
            _versioned(_TOOLS[m.group()], text, m.start(), m.end()) for m in _HAN_TOOL_RE.finditer(text)
        ]
        found.sort(key=lambda hit: hit[1])
    return tuple(found)


def _name_at(text: str, tokens: list[tuple[str, int, int]], index: int) -> tuple[str, int, int] | None:
    """The tool name that starts at token `index` (the longest), as (alias, start, end), or None."""
    token, start, _ = tokens[index]
    word = token.rstrip(".-").lower()  # "Postgres." ends a sentence; "next.js" keeps its dot
    if not word:
        return None
    for words in _MULTI.get(word, ()):
        last = index + len(words) - 1
        if last < len(tokens) and all(
            tokens[index + k][0].rstrip(".-").lower() == w
            and text[tokens[index + k - 1][2] : tokens[index + k][1]] == " "
            for k, w in enumerate(words[1:], 1)
        ):
            return " ".join(words), start, tokens[last][1] + len(tokens[last][0].rstrip(".-"))
    if word in _TOOLS and not token.startswith((".", "-")):  # ".github/workflows" is a path
        return word, start, start + len(word)
    return None


def _versioned(tool: Tool, text: str, start: int, end: int) -> tuple[Tool, int, int]:
    """A slotted tool with the version written right after it ("Go 1.22") in its value and its span."""
    version = _VERSION_RE.match(text, end) if tool.slot else None
    if version is None and tool.slot:  # "Node 版本是 16", "JDK 已经是 21 了", "the Go version is 1.23"
        bridge = _VERSION_BRIDGE_RE.match(text, end)
        version = _VERSION_RE.match(text, bridge.end()) if bridge else None
        if version is not None and _NOT_A_VERSION_RE.match(text, version.end()):
            version = None
    if version:
        v = version.group("v")
        tool = tool._replace(canonical=f"{tool.canonical} {v}", display=f"{tool.display} {v}")
        end = version.end()
    return tool._replace(said=text[start:end].strip()), start, end


# What marks a tool as the value being left: "from npm", "replaced Flask with", "off Mongo", "no longer X".
_OLD_VALUE_RE = re.compile(
    r"(?:\b(?:from|off|replaced|replacing|replace|instead\s+of|rather\s+than|no\s+longer(?:\s+use)?|not|ditched|"
    r"dropped|left|leaving|away\s+from|over|than|retired|killed|sunset|deprecated|against|ruled\s+out|rejected|"
    r"ripped(?:\s+out)?|tore(?:\s+out)?|swapped(?:\s+out)?|pulled(?:\s+out)?|got\s+rid\s+of|removed|phased\s+out|gave\s+up(?:\s+on)?|"
    r"scrapped|dumped|binned|abandoned|never|without|uninstalled|deinstalled|deleted|closed|shut\s+down|cancell?ed|"
    r"decommissioned|"
    r"(?:don't|do\s+not|stop)\s+(?:use|using|suggest|write|writing))|从|不再用?|替换掉?|换掉|弃用|放弃了?|不用|不是|"
    r"而不是|代替|取代|没用|没上|没选|不选|否掉|下掉了?|干掉了?|去掉了?|拿掉了?|(?:别|不要)再?(?:用|写|推荐))"
    # the object's determiners and modifiers may stand between the verb and the tool: "replaced self-hosted
    # Sentry", "dropped our old Jenkins", "moved off the legacy on-prem GitLab"
    r"\s*(?:(?:the|our|my|using|old|legacy|previous|former|existing|current|classic|trusty|ancient|managed|hosted|"
    r"(?-i:[a-z]+-[a-z]+))\s+){0,3}$",
    re.I,
)


# What marks a tool as gone, after it: "the Jenkins box is gone", "Jenkins 已经下线了".
_GONE_AFTER_RE = re.compile(
    r"\s*(?:[\w.-]+\s+){0,2}?(?:is|are|'s)\s+(?:now\s+)?(?:gone|dead|retired|history|deprecated|decommissioned)\b"
    # "the GCP project gets shut down on Friday", "the Hetzner box got decommissioned", "Azure subscription
    # cancelled", "TF only lives in the archived repo now"
    r"|\s*(?:[\w.-]+\s+){0,2}?(?:(?:is|are|was|were|gets|got|get|will\s+be|has\s+been|have\s+been|being)\s+)?"
    r"(?:(?:finally|now|being|getting)\s+)?(?:shut\s+down|shutdown|decommissioned|cancell?ed|sunset|sunsetted|"
    r"turned\s+off|switched\s+off|torn\s+down|deleted|archived|retired|deprecated|removed|dropped|killed)\b"
    r"|\s*only\s+(?:lives|exists|remains|survives)\s+in\b"
    # "yarn isn't even installed", "npm is not installed here"
    r"|\s*(?:isn't|is\s+not|aren't|are\s+not|'s\s+not)\s+(?:even\s+)?(?:installed|used|in\s+use)\b"
    r"|\s*(?:[\w.-]+\s+){0,1}?out\b(?=.{0,30}\b(?:and|for|in\s+favou?r)\b)"  # "ripped yarn out ... and went with"
    r"|\s*(?:那边|那套|那台|这边)?\s*(?:已经|早就|早|下个月|下周|马上|就要|即将)?(?:都)?(?:没了|下线了?|下掉了?|退役了?|"
    r"不用了|废弃了?|停用了?|淘汰了?|停掉了?|关掉了?|删掉了?|删了|退订了?|注销了?|到期不续了?)",
    re.I,
)


def named_as_left(text: str, start: int, end: int | None = None) -> bool:
    """The tool named at `start` (ending at `end`) is the value being left ("moved off Vercel", "got rid of
    Heroku", "从 npm", "the Jenkins box is gone")."""
    if _OLD_VALUE_RE.search(text[max(0, start - 40) : start]) is not None:
        return True
    return end is not None and _GONE_AFTER_RE.match(text, end) is not None


def only_left(text: str) -> bool:
    """`text` names tools of a slot and every one as the value left ("the Mongo cluster was retired in June",
    "Jenkins 退役了"): it tells what is gone, which the new value replaces, not a fact of its own."""
    slotted = [(start, end) for tool, start, end in find_tools(text) if tool.slot]
    return bool(slotted) and all(named_as_left(text, start, end) for start, end in slotted)


def first_current_tool(text: str) -> Tool | None:
    """The first slotted tool of `text` not named as the value left ("moved off Vercel onto Cloudflare")."""
    return next(
        (t for t, start, end in find_tools(text) if t.slot and not named_as_left(text, start, end)),
        None,
    )


def current_tool(text: str) -> Tool | None:
    """The one slotted tool `text` names as the current value: tools named as the value left ("moved off
    Mongo to DynamoDB", "从 Jenkins 换成 GitHub Actions") do not count; None when there is no such tool or
    when two slots or two values remain."""
    current = [
        tool for tool, start, end in find_tools(text) if tool.slot and not named_as_left(text, start, end)
    ]
    if len({(t.slot, t.canonical) for t in current}) != 1:
        return None
    return current[0]


# Topics whose statements hold one current value, whatever the words: a later statement on the same topic
# replaces the earlier one ("backups go to Glacier weekly" -> "we now back up daily to Wasabi").
_TOPIC_SLOTS = tuple((re.compile(pattern, re.I), slot) for pattern, slot in (
    (r"\bback(?:ed)?[\s-]?ups?\b|\bbacks\s+up\b|备份", "project.backups"),
    (r"\bmonitoring\b|\balerting\b|监控|告警", "project.monitoring"),
    (r"\b(?:my|our|the\s+team's)\s+(?:new\s+)?(?:manager|boss|team\s+lead|lead|skip)\b|(?:组|团队|部门)的?\s*"
     r"(?:leader|老大|领导|经理|负责人)|我的?(?:领导|老板|经理|leader|直属)", "user.manager"),
    (r"\b(?:release|deploy|ship)s?\s+(?:day|window|schedule|cadence)\b|发版|上线窗口|发布窗口"
     r"|\b(?:release|deploy|ship)(?:s|ed)?\s+(?:\w+\s+)?on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b",
     "project.release_schedule"),
    (r"\bon-?call\b|值班", "project.on_call"),
    # the place of work: "our office is in the Shoreditch building", "we moved offices to King's Cross", "公司在望京"
    (r"\b(?:our|my)\s+(?:new\s+|main\s+)?office\b|\boffices?\s+(?:moved|to)\b|\bmoved\s+offices\b"
     r"|^(?:我们)?公司(?:现在|已经)*(?:在|搬到|搬去|迁到)|办公室|办公地点", "user.office"),
    (r"\blicen[cs]e[ds]?\b|许可证|开源协议|授权协议", "project.license"),
    (r"\bconnection\s+pool(?:ing|er)?\b|连接池", "project.connection_pool"),
    (r"\blog(?:s|ging)\s+(?:go|goes|are|is|went|moved|live|land|ship)\b|\blogging\b(?!\s+(?:off|on|in|out|into)\b)|"
     r"日志(?:系统|平台|都|全)?", "project.logging"),
    (r"\b(?:service|gateway|api|server|app)\s+port\b|\bport\s+(?:is|to|from|changed|moved)\b|\bon\s+port\s+\d|端口",
     "project.port"),
    (r"\bwake\s+up\b|\bget\s+up\s+at\b|起床|点起\b|点起(?=$|[,.!~了])", "user.wake_time"),
    (r"\b(?:bike|bikes|biking|cycle|cycles|cycling|drive|drives|driving|walk|walks|walking|commute|commutes|"
     r"commuting)\s+(?:in\s+)?(?:to\s+(?:work|the\s+office)|in\b)|通勤|(?:骑|开车|坐地铁|坐公交|走路)\S{0,5}上班|"
     r"上班(?:骑|开车|坐|走路)", "user.commute"),
    (r"备考|改考|报考|\bstudying\s+for\s+(?:the\s+|an?\s+)?(?-i:[A-Z])", "user.exam"),
    (r"(?:在|改|开始|正在)练(?!手|习)|不练了|\btraining\s+for\s+(?:a|an|the|my)\b|"
     r"\b(?:full\s+|half[\s-])?marathon\b|\btriathlon\b|\b(?:5|10|21)k\s+(?:race|run)\b|马拉松|半马|全马",
     "user.exercise"),
    # how changes get merged: "code review needs one approval" -> "至少两个人批才能合"
    (r"\bcode\s+reviews?\b|\bapprovals?\b|\breviewers?\b|(?:[一两二三几]|\d)\s*个?人(?:批|审|review|approve)|评审|审批",
     "project.review_policy"),
    (r"\bbootcamp\b|\b(?<!of\s)(?<!due\s)(?:online\s+)?course\b(?!\s+of\b)|\bspeciali[sz]ation\b|网课|课程|培训班",
     "user.course"),
    (r"导师|\b(?:my|our)\s+(?:phd\s+|thesis\s+)?(?:advisor|adviser|supervisor)\b", "user.supervisor"),
    # where the user keeps notes: "我记笔记用印象笔记" -> "笔记全迁到 Obsidian 了", "my notes live in Bear"
    (r"记笔记|笔记(?:现在|目前|已经)*(?:都|全|软件|工具|app)|\b(?:my|our)\s+notes\b|\bnote[- ]taking\b|\bnotes\s+app\b",
     "user.notes_app"),
))  # fmt: skip


# Topics whose statements name tools as what they are about, not as the project's stack: "备份到阿里云 OSS" is a
# backup policy, "a course on Rust" is a course, "logs go to Datadog" is where logs go: the topic's slot, not
# the tool's.
TOPICS_OVER_TOOLS = frozenset({"project.backups", "user.course", "user.exam", "project.logging"})


def topic_slot(text: str) -> str | None:
    """The single-valued topic a statement is about (backups, monitoring, the user's manager ...), or None."""
    return next((slot for pattern, slot in _TOPIC_SLOTS if pattern.search(text)), None)


def topic_match(text: str) -> tuple[str, re.Match[str]] | None:
    """The single-valued topic `text` names and where it names it, or None."""
    for pattern, slot in _TOPIC_SLOTS:
        found = pattern.search(text)
        if found is not None:
            return slot, found
    return None


def topic_noun_first(text: str) -> bool:
    """The clause opens with its topic ("release day moved to Thursday", "the license is now Apache-2.0"): the
    topic is its subject, so the statement is about it, not about someone else's doings."""
    return any((m := pattern.search(text)) is not None and m.start() <= 12 for pattern, _ in _TOPIC_SLOTS)


def is_tool(text: str) -> bool:
    return text.lower() in _TOOLS


# The user's relatives and others close to them, in Chinese: "我弟在学 Java", "我表姐搬到成都了" speak of them, not
# of the user.
# 要是 ("if"), not inside 主要是 ("mainly is"), 需要是 or 重要是: "stack 主要是 Kotlin" supposes nothing
ZH_IF_YAOSHI = r"(?<![主需重])要是"
ZH_KIN = (
    r"(?:表姐|表哥|表妹|表弟|堂哥|堂姐|堂弟|堂妹|哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹|爸爸|妈妈|爸|妈|老爸|老妈|爷爷|奶奶|外公|外婆|"
    r"老公|老婆|媳妇|妻子|丈夫|儿子|女儿|男朋友|女朋友|对象|舅舅|姑姑|阿姨|叔叔|侄子|外甥|师兄|师姐|室友|上司|领导|老板)"
)
# someone else as the subject, in Chinese: a relative or close one ("对象" not in "对象存储", object storage), he, she
ZH_OTHERS = rf"(?:{ZH_KIN})(?!存储)|他|她"


# fmt: off
LANGUAGE_CODES = {
    "english": "en", "chinese": "zh", "mandarin": "zh", "japanese": "ja", "french": "fr", "german": "de",
    "spanish": "es", "korean": "ko", "portuguese": "pt", "italian": "it", "russian": "ru", "中文": "zh",
    "汉语": "zh", "普通话": "zh", "英文": "en", "英语": "en", "日语": "ja", "日文": "ja", "韩语": "ko",
    "法语": "fr", "德语": "de", "西班牙语": "es",
    # a language's variety: spelling and words differ, so it is kept
    "british english": "en-gb", "uk english": "en-gb", "american english": "en-us", "us english": "en-us",
    "simplified chinese": "zh-hans", "traditional chinese": "zh-hant", "brazilian portuguese": "pt-br",
    "简体中文": "zh-hans", "繁体中文": "zh-hant", "繁体": "zh-hant", "简体": "zh-hans", "英式英语": "en-gb",
    "美式英语": "en-us",
}
# fmt: on
