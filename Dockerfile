# One image for every service of docker-compose.yml and for GPU hosts joining a cluster.
# torch==2.14.1 from PyPI is the CUDA build on linux/x86_64: the same image trains on a GPU when the container
# is given one (docker run --gpus all / compose device reservations) and on the CPU otherwise.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NAS_NO_BOOTSTRAP=1 \
    DJANGO_SETTINGS_MODULE=webapp.settings.production \
    NAS_STATE_DIR=/var/lib/nas \
    NAS_DATA_DIR=/data

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
RUN useradd --create-home --uid 1000 nas \
    && mkdir -p /var/lib/nas /data \
    && chown nas /var/lib/nas /data
USER nas

EXPOSE 8000
# A GPU host: one evaluation worker per visible GPU. Override REDIS_URL (or pass --redis) and SECRET_KEY.
CMD ["python", "manage.py", "evalworker", "--device", "all"]
