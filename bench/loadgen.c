/* The load generator bench/server.py compiles and drives (loopback only).
 *
 * THREADS threads (default 1), each its own epoll loop over its share of CONNS connections to
 * 127.0.0.1:PORT (split as evenly as they go; never more threads than connections), each
 * connection sending the request in REQFILE again and again for SECONDS seconds: on one
 * connection after another (keep-alive) or on a new connection each time (close mode: the
 * request says `Connection: close`, and once the response is complete the client drops the
 * socket with an RST, so no TIME_WAIT piles up and a server that keeps the connection open
 * anyway is not waited for). Every response is parsed (status line, Content-Length or chunked
 * framing, or a body up to the end of file) and its `data: ` lines are counted as they arrive,
 * across read and chunk boundaries. It prints one JSON line over all threads: responses,
 * events, bytes, errors (a status other than 200, a broken frame, or a response whose event
 * count differs from EXPECT), the wall and CPU seconds of the whole process, the CPU and wall
 * seconds of its busiest thread (one thread is what saturates a core first, so that is the
 * figure that says whether the client kept up), the time to the first event (p50, p99 over
 * every response of every thread) from the moment the request was sent (close mode: from the
 * connect), and each thread's connections and complete responses. Where the request holds `@@@@@@@@`, each request carries a new 8-hex-digit number
 * there (a request the server has never seen, whichever thread sends it).
 *
 *   loadgen PORT REQFILE CONNS SECONDS KEEPALIVE(0|1) EXPECT(0: any) [THREADS(default 1)]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { HEAD, CHUNK_SIZE, CHUNK_DATA, CHUNK_CRLF, TRAILER, LENGTH_BODY, EOF_BODY, DRAIN };

typedef struct {
    int fd;
    int state;
    int connecting;
    char head[8192];
    size_t head_len;
    char line[64];
    size_t line_len;
    uint64_t remaining;
    char tail[5];
    size_t tail_len;
    long events;
    int status;
    double sent_at;
    int got_first;
    int source;
} Conn;

static const char NEEDLE[] = "data: ";
/* Read by every thread, written only before they start. */
static const char *request_template;
static size_t request_len;
static int port, keepalive, nthreads;
static long expect;
/* Each thread's own loop state and tallies (thread-local, so the parser and the loop read as
 * they did with one thread, and no counter is shared or contended); main() sums them after
 * the threads end. */
static __thread char *request; /* this thread's copy: the counter below is written into it */
static __thread long responses, events, errors;
static __thread uint64_t total_bytes;
static __thread double *ttfb;
static __thread size_t ttfb_len, ttfb_cap;
static __thread int epfd;
static __thread unsigned source_counter;
static __thread char *counter_at; /* `@@@@@@@@` in the request: a new 8-hex-digit number each time */
static __thread unsigned request_counter; /* thread i sends i, i + THREADS, ...: never a repeat */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note_ttfb(Conn *c) {
    if (c->got_first) return;
    c->got_first = 1;
    if (ttfb_len == ttfb_cap) {
        ttfb_cap = ttfb_cap ? ttfb_cap * 2 : 1 << 16;
        ttfb = realloc(ttfb, ttfb_cap * sizeof *ttfb);
        if (!ttfb) { perror("realloc"); exit(2); }
    }
    ttfb[ttfb_len++] = now() - c->sent_at;
}

/* Count `data: ` in body bytes, including a match that straddles the previous piece. */
static void count_body(Conn *c, const char *p, size_t n) {
    if (!n) return;
    long found = 0;
    if (c->tail_len) {
        char joined[10];
        size_t head = n < 5 ? n : 5;
        memcpy(joined, c->tail, c->tail_len);
        memcpy(joined + c->tail_len, p, head);
        size_t len = c->tail_len + head;
        for (size_t i = 0; i < c->tail_len && i + 6 <= len; i++)
            if (!memcmp(joined + i, NEEDLE, 6)) found++;
    }
    const char *at = p, *end = p + n;
    while ((at = memmem(at, end - at, NEEDLE, 6)) != NULL) {
        found++;
        at += 6;
    }
    /* keep the last (up to) 5 bytes of body seen so far */
    if (n >= 5) {
        memcpy(c->tail, end - 5, 5);
        c->tail_len = 5;
    } else {
        size_t keep = c->tail_len + n > 5 ? 5 - n : c->tail_len;
        memmove(c->tail, c->tail + c->tail_len - keep, keep);
        memcpy(c->tail + keep, p, n);
        c->tail_len = keep + n;
    }
    if (found) {
        note_ttfb(c);
        c->events += found;
        events += found;
    }
}

static int open_conn(Conn *c);

static void close_conn(Conn *c, int rst) {
    if (rst) {
        struct linger lg = {1, 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(c->fd);
    c->fd = -1;
}

static void reset_response(Conn *c) {
    c->state = HEAD;
    c->head_len = 0;
    c->line_len = 0;
    c->tail_len = 0;
    c->events = 0;
    c->status = 0;
    c->got_first = 0;
}

static int send_request(Conn *c) {
    c->sent_at = keepalive ? now() : c->sent_at;
    if (counter_at) {
        char digits[9];
        snprintf(digits, sizeof digits, "%08x", request_counter);
        request_counter += (unsigned)nthreads;
        memcpy(counter_at, digits, 8);
    }
    size_t off = 0;
    while (off < request_len) {
        ssize_t w = write(c->fd, request + off, request_len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1; /* a request is small: a full socket buffer here means trouble */
        }
        off += (size_t)w;
    }
    return 0;
}

static void response_done(Conn *c, int ok) {
    responses++;
    if (!ok || c->status != 200 || (expect && c->events != expect)) errors++;
}

/* After a complete response: the next request (keep-alive), or a new connection. */
static int after_response(Conn *c) {
    response_done(c, 1);
    if (keepalive) {
        reset_response(c);
        return send_request(c);
    }
    c->state = DRAIN;
    return 1; /* the caller drops the connection now (some servers keep it open) */
}

static int parse_head(Conn *c, const char **p, size_t *n) {
    size_t room = sizeof c->head - 1 - c->head_len;
    size_t take = *n < room ? *n : room;
    memcpy(c->head + c->head_len, *p, take);
    size_t old = c->head_len;
    c->head_len += take;
    c->head[c->head_len] = 0;
    char *end = strstr(c->head, "\r\n\r\n");
    if (!end) {
        if (c->head_len == sizeof c->head - 1) return -1;
        *p += take;
        *n -= take;
        return 0;
    }
    size_t used = (size_t)(end + 4 - c->head) - old;
    *p += used;
    *n -= used;
    *end = 0;
    c->status = atoi(c->head + 9);
    int chunked = 0, have_length = 0;
    uint64_t length = 0;
    for (char *line = strstr(c->head, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        if (!strncasecmp(line, "transfer-encoding:", 18) && strcasestr(line, "chunked")) chunked = 1;
        if (!strncasecmp(line, "content-length:", 15)) {
            have_length = 1;
            length = strtoull(line + 15, NULL, 10);
        }
    }
    if (chunked) {
        c->state = CHUNK_SIZE;
    } else if (have_length) {
        c->state = LENGTH_BODY;
        c->remaining = length;
    } else {
        c->state = EOF_BODY;
    }
    return 1;
}

/* Feed bytes to the response parser; -1 on a broken response, 1 when a close-mode response
 * is complete (the connection is dropped). */
static int feed(Conn *c, const char *p, size_t n) {
    while (n) {
        switch (c->state) {
        case HEAD: {
            int r = parse_head(c, &p, &n);
            if (r < 0) return -1;
            if (r == 0) return 0;
            if (c->state == LENGTH_BODY && c->remaining == 0) {
                int r2 = after_response(c);
                if (r2) return r2;
            }
            break;
        }
        case CHUNK_SIZE:
        case TRAILER: {
            const char *nl = memchr(p, '\n', n);
            size_t take = nl ? (size_t)(nl - p) + 1 : n;
            if (c->line_len + take >= sizeof c->line) return -1;
            memcpy(c->line + c->line_len, p, take);
            c->line_len += take;
            p += take;
            n -= take;
            if (!nl) return 0;
            c->line[c->line_len] = 0;
            c->line_len = 0;
            if (c->state == TRAILER) {
                if (c->line[0] == '\r' || c->line[0] == '\n') {
                    int r2 = after_response(c);
                    if (r2) return r2;
                }
                break;
            }
            char *stop;
            uint64_t size = strtoull(c->line, &stop, 16);
            if (stop == c->line) return -1;
            if (size == 0) {
                c->state = TRAILER;
            } else {
                c->state = CHUNK_DATA;
                c->remaining = size;
            }
            break;
        }
        case CHUNK_DATA:
        case LENGTH_BODY: {
            size_t take = n < c->remaining ? n : (size_t)c->remaining;
            count_body(c, p, take);
            p += take;
            n -= take;
            c->remaining -= take;
            if (!c->remaining) {
                if (c->state == CHUNK_DATA) {
                    c->state = CHUNK_CRLF;
                    c->line_len = 0;
                } else {
                    int r2 = after_response(c);
                    if (r2) return r2;
                }
            }
            break;
        }
        case CHUNK_CRLF: {
            const char *nl = memchr(p, '\n', n);
            if (!nl) return 0;
            n -= (size_t)(nl - p) + 1;
            p = nl + 1;
            c->state = CHUNK_SIZE;
            break;
        }
        case EOF_BODY:
            count_body(c, p, n);
            return 0;
        case DRAIN:
            return 0; /* bytes after a complete response on a closing connection: ignored */
        }
    }
    return 0;
}

static int open_conn(Conn *c) {
    reset_response(c);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) { perror("socket"); exit(2); }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Close mode makes connections fast: spread their source addresses over 127.0.0.2-251 so
     * the ephemeral ports of one address never run out. */
    if (!keepalive) {
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr = htonl(0x7f000002u + (source_counter++ % 250));
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src) < 0) { perror("bind"); exit(2); }
    }
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    dst.sin_addr.s_addr = htonl(0x7f000001u);
    c->sent_at = now();
    c->connecting = 1;
    if (connect(c->fd, (struct sockaddr *)&dst, sizeof dst) < 0 && errno != EINPROGRESS) {
        perror("connect");
        exit(2);
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    return 0;
}

static void recycle(Conn *c, int rst, int stopping) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close_conn(c, rst);
    if (!stopping) open_conn(c);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One thread's share of the connections, and what it counted. */
typedef struct {
    int index, conns;
    double deadline;
    pthread_t id;
    long responses, events, errors;
    uint64_t bytes;
    double *ttfb;
    size_t ttfb_len;
    Conn *pool; /* left open for main() to drop once it has read the CPU times */
    double ended;
    double cpu, wall; /* this thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) and wall time */
} Worker;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *run(void *arg) {
    Worker *w = arg;
    double cpu0 = thread_cpu(), wall0 = now();
    request = malloc(request_len ? request_len : 1);
    if (!request) { perror("malloc"); exit(2); }
    memcpy(request, request_template, request_len);
    counter_at = memmem(request, request_len, "@@@@@@@@", 8);
    request_counter = (unsigned)w->index;
    source_counter = (unsigned)w->index; /* threads start on different source addresses */
    epfd = epoll_create1(0);
    if (epfd < 0) { perror("epoll_create1"); exit(2); }
    Conn *pool = calloc((size_t)w->conns, sizeof *pool);
    char *buf = malloc(1 << 16);
    if (!pool || !buf) { perror("calloc"); exit(2); }
    const size_t buf_size = 1 << 16;
    for (int i = 0; i < w->conns; i++) open_conn(&pool[i]);
    struct epoll_event evs[512];
    int stopping = 0;
    while (!stopping) {
        int k = epoll_wait(epfd, evs, 512, 100);
        if (now() >= w->deadline) stopping = 1;
        for (int i = 0; i < k; i++) {
            Conn *c = evs[i].data.ptr;
            if (c->fd < 0) continue;
            if (c->connecting) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err) { errors++; recycle(c, 1, stopping); continue; }
                if (!(evs[i].events & EPOLLOUT)) continue;
                c->connecting = 0;
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
                double connected_from = c->sent_at;
                if (send_request(c) < 0) { errors++; recycle(c, 1, stopping); continue; }
                if (!keepalive) c->sent_at = connected_from;
                continue;
            }
            for (;;) {
                ssize_t got = read(c->fd, buf, buf_size);
                if (got > 0) {
                    total_bytes += (uint64_t)got;
                    int fed = feed(c, buf, (size_t)got);
                    if (fed) {
                        if (fed < 0) errors++;
                        recycle(c, 1, stopping);
                        break;
                    }
                    if ((size_t)got < buf_size) break;
                    continue;
                }
                if (got < 0 && errno == EINTR) continue;
                if (got < 0 && errno == EAGAIN) break;
                /* end of file (or a reset) */
                if (c->state == DRAIN) {
                    recycle(c, 1, stopping);
                } else if (c->state == EOF_BODY) {
                    response_done(c, 1);
                    recycle(c, 1, stopping);
                } else {
                    errors++;
                    recycle(c, 1, stopping);
                }
                break;
            }
        }
    }
    w->ended = now();
    w->wall = w->ended - wall0;
    w->cpu = thread_cpu() - cpu0;
    w->pool = pool;
    free(buf);
    free(request);
    w->responses = responses;
    w->events = events;
    w->errors = errors;
    w->bytes = total_bytes;
    w->ttfb = ttfb;
    w->ttfb_len = ttfb_len;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: loadgen PORT REQFILE CONNS SECONDS KEEPALIVE EXPECT [THREADS]\n");
        return 2;
    }
    port = atoi(argv[1]);
    int conns = atoi(argv[3]);
    double seconds = atof(argv[4]);
    keepalive = atoi(argv[5]);
    expect = atol(argv[6]);
    int want = argc == 8 ? atoi(argv[7]) : 1;
    if (conns < 1 || want < 1) {
        fprintf(stderr, "loadgen: CONNS and THREADS must be at least 1\n");
        return 2;
    }
    nthreads = want < conns ? want : conns; /* a thread never has no connection */
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    char *req = malloc(1 << 20);
    if (!req) { perror("malloc"); return 2; }
    request_len = fread(req, 1, 1 << 20, f);
    fclose(f);
    request_template = req;

    Worker *workers = calloc((size_t)nthreads, sizeof *workers);
    if (!workers) { perror("calloc"); return 2; }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double start = now(), deadline = start + seconds;
    for (int t = 0; t < nthreads; t++) {
        Worker *w = &workers[t];
        w->index = t;
        w->conns = conns / nthreads + (t < conns % nthreads);
        w->deadline = deadline;
        int err = pthread_create(&w->id, NULL, run, w);
        if (err) { fprintf(stderr, "pthread_create: %s\n", strerror(err)); return 2; }
    }
    long all_responses = 0, all_events = 0, all_errors = 0;
    uint64_t all_bytes = 0;
    size_t samples = 0;
    int busiest = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(workers[t].id, NULL);
        Worker *w = &workers[t];
        all_responses += w->responses;
        all_events += w->events;
        all_errors += w->errors;
        all_bytes += w->bytes;
        samples += w->ttfb_len;
        /* busiest by its own share of a core (CPU over its wall time) */
        if (w->cpu * workers[busiest].wall > workers[busiest].cpu * w->wall) busiest = t;
    }
    getrusage(RUSAGE_SELF, &r1);
    double ended = start;
    for (int t = 0; t < nthreads; t++) ended = workers[t].ended > ended ? workers[t].ended : ended;
    double wall = ended - start;
    for (int t = 0; t < nthreads; t++)
        for (int i = 0; i < workers[t].conns; i++)
            if (workers[t].pool[i].fd >= 0) close_conn(&workers[t].pool[i], 1);
    double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6
               + (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    double *all_ttfb = malloc((samples ? samples : 1) * sizeof *all_ttfb);
    if (!all_ttfb) { perror("malloc"); return 2; }
    size_t at = 0;
    for (int t = 0; t < nthreads; t++) {
        if (workers[t].ttfb_len) memcpy(all_ttfb + at, workers[t].ttfb, workers[t].ttfb_len * sizeof *all_ttfb);
        at += workers[t].ttfb_len;
        free(workers[t].ttfb);
    }
    qsort(all_ttfb, samples, sizeof *all_ttfb, cmp);
    double p50 = samples ? all_ttfb[(size_t)(0.5 * samples)] : 0, p99 = samples ? all_ttfb[(size_t)(0.99 * samples)] : 0;
    printf("{\"responses\": %ld, \"events\": %ld, \"bytes\": %llu, \"errors\": %ld, \"wall\": %.6f, "
           "\"cpu\": %.6f, \"threads\": %d, \"busiest_cpu\": %.6f, \"busiest_wall\": %.6f, "
           "\"ttfb_p50_ms\": %.3f, \"ttfb_p99_ms\": %.3f, \"thread_conns\": [",
           all_responses, all_events, (unsigned long long)all_bytes, all_errors, wall, cpu, nthreads,
           workers[busiest].cpu, workers[busiest].wall, p50 * 1000, p99 * 1000);
    for (int t = 0; t < nthreads; t++) printf("%s%d", t ? ", " : "", workers[t].conns);
    printf("], \"thread_responses\": [");
    for (int t = 0; t < nthreads; t++) printf("%s%ld", t ? ", " : "", workers[t].responses);
    printf("]}\n");
    return 0;
}
