/* ort_host: serves ONNX Runtime sessions on the DirectML execution provider to dml2onnx.
 *
 * A Windows console program (cross-compiled with mingw-w64, run under Wine on Linux). It loads
 * onnxruntime.dll from its own folder and talks to one client over stdin/stdout, with the
 * framing of host_common.h (shared with dml_exec.c): u64-length-prefixed requests (u8 opcode,
 * then its fields) and responses (u8 status, 0 ok or 1 error, then fields or the error text).
 *
 * All integers are little-endian. Strings are u32 length + bytes. Opcodes:
 *   'V' INFO                          -> str ORT version, str EP mode of the host
 *   'L' LOAD  u32 flags, model bytes  -> u32 session id, u32 inputs, u32 outputs
 *            flags: 1 = CPU EP (for testing the host), 2 = DirectML on a D3D12 device made
 *            here that hides Int64ShaderOps from DirectML (see dml_device_hooked), 4 = DirectML
 *            graph fusion off (each node its own DirectML operator: sessions load ~2-3x faster)
 *   'P' LOADPATH u32 flags, str model path, str folder, str optimized, u32 log level, u32 k,
 *            k x (str key, str value) -> as LOAD. The session is made from the file (ONNX
 *            Runtime's DirectML EP serializes its graphs only for a model with a path) while the
 *            process's current folder is `folder` (where serialized graphs are written), with the
 *            k session config entries (over the flags' own), ONNX Runtime's log level (0 verbose
 *            .. 4 fatal), and, where `optimized` is not "", the optimized model written there.
 *   'R' RUN   u32 session, u32 n, n x (str name, u32 ONNX element type, u32 rank, i64 dims[rank],
 *             u64 byte count, bytes), u32 m, m x str output name
 *                                     -> u32 m, m x (u32 element type, u32 rank, i64 dims[rank],
 *                                        u64 byte count, bytes)
 *   'F' FREE  u32 session             -> (nothing)
 *   'Q' QUIT                          -> (nothing), then the process exits
 *
 * After each response the host writes `ort_host: served N` (N counts requests) to stderr, so the
 * client knows when everything the request made the Vulkan stack print has arrived.
 *
 * Every DirectML session is created with session.disable_cpu_ep_fallback=1, the memory pattern
 * off and sequential execution, so a session that loads runs every node on DirectML.
 *
 * The parts of ONNX Runtime's C API used here are declared below by their slot in the OrtApi
 * function table (the table is append-only across releases, so slots never move). Built for
 * Linux (cc ort_host.c -ldl, ORT_HOST_LIBRARY=.../libonnxruntime.so.N) it drives the CPU EP of
 * the Python wheel's library instead (LOAD flag 1 only), which tests the protocol without Wine.
 *
 * Environment: ORT_HOST_HIDE and ORT_HOST_TRACE (see read_hide_list), ORT_HOST_CONFIG
 * ("key=value;..." extra session config entries, for experiments).
 */

#define HOST_NAME "ort_host"
#include "host_common.h"

#ifndef _WIN32
#include <dlfcn.h>
#endif

/* ---- ONNX Runtime C API: opaque handles and the slots of OrtApi that are used ---------------- */

typedef void OrtStatus;
typedef void OrtEnv;
typedef void OrtSession;
typedef void OrtSessionOptions;
typedef void OrtValue;
typedef void OrtMemoryInfo;
typedef void OrtTensorTypeAndShapeInfo;

#ifdef _WIN32
typedef wchar_t ORTCHAR_T;
#else
typedef char ORTCHAR_T;
#endif

typedef struct {
    const void *const *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtApiBase;

/* Slots 0..130 all exist since API version 4; ask for that one. */
#define API_VERSION 4
enum {
    SLOT_CreateStatus = 0,
    SLOT_GetErrorCode = 1,
    SLOT_GetErrorMessage = 2,
    SLOT_CreateEnv = 3,
    SLOT_CreateSession = 7,
    SLOT_CreateSessionFromArray = 8,
    SLOT_Run = 9,
    SLOT_CreateSessionOptions = 10,
    SLOT_SetOptimizedModelFilePath = 11,
    SLOT_SetSessionExecutionMode = 13,
    SLOT_DisableMemPattern = 17,
    SLOT_SetSessionLogSeverityLevel = 22,
    SLOT_SessionGetInputCount = 30,
    SLOT_SessionGetOutputCount = 31,
    SLOT_CreateTensorWithDataAsOrtValue = 49,
    SLOT_GetTensorMutableData = 51,
    SLOT_GetTensorElementType = 60,
    SLOT_GetDimensionsCount = 61,
    SLOT_GetDimensions = 62,
    SLOT_GetTensorShapeElementCount = 64,
    SLOT_GetTensorTypeAndShape = 65,
    SLOT_CreateCpuMemoryInfo = 69,
    SLOT_ReleaseEnv = 92,
    SLOT_ReleaseStatus = 93,
    SLOT_ReleaseMemoryInfo = 94,
    SLOT_ReleaseSession = 95,
    SLOT_ReleaseValue = 96,
    SLOT_ReleaseTensorTypeAndShapeInfo = 99,
    SLOT_ReleaseSessionOptions = 100,
    SLOT_AddSessionConfigEntry = 130,
};

static const void *const *api;
#define F(slot, ...) ((__VA_ARGS__)api[SLOT_##slot])

#define CreateStatus F(CreateStatus, OrtStatus *(*)(int, const char *))
#define GetErrorCode F(GetErrorCode, int (*)(const OrtStatus *))
#define GetErrorMessage F(GetErrorMessage, const char *(*)(const OrtStatus *))
#define CreateEnv F(CreateEnv, OrtStatus *(*)(int, const char *, OrtEnv **))
#define CreateSession F(CreateSession, OrtStatus *(*)(const OrtEnv *, const ORTCHAR_T *, const OrtSessionOptions *, OrtSession **))
#define CreateSessionFromArray \
    F(CreateSessionFromArray, OrtStatus *(*)(const OrtEnv *, const void *, size_t, const OrtSessionOptions *, OrtSession **))
#define Run                                                                                          \
    F(Run, OrtStatus *(*)(OrtSession *, const void *, const char *const *, const OrtValue *const *, \
                          size_t, const char *const *, size_t, OrtValue **))
#define CreateSessionOptions F(CreateSessionOptions, OrtStatus *(*)(OrtSessionOptions **))
#define SetOptimizedModelFilePath F(SetOptimizedModelFilePath, OrtStatus *(*)(OrtSessionOptions *, const ORTCHAR_T *))
#define SetSessionExecutionMode F(SetSessionExecutionMode, OrtStatus *(*)(OrtSessionOptions *, int))
#define DisableMemPattern F(DisableMemPattern, OrtStatus *(*)(OrtSessionOptions *))
#define SetSessionLogSeverityLevel F(SetSessionLogSeverityLevel, OrtStatus *(*)(OrtSessionOptions *, int))
#define SessionGetInputCount F(SessionGetInputCount, OrtStatus *(*)(const OrtSession *, size_t *))
#define SessionGetOutputCount F(SessionGetOutputCount, OrtStatus *(*)(const OrtSession *, size_t *))
#define CreateTensorWithDataAsOrtValue                                                             \
    F(CreateTensorWithDataAsOrtValue, OrtStatus *(*)(const OrtMemoryInfo *, void *, size_t, const int64_t *, \
                                                     size_t, int, OrtValue **))
#define GetTensorMutableData F(GetTensorMutableData, OrtStatus *(*)(OrtValue *, void **))
#define GetTensorElementType F(GetTensorElementType, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, int *))
#define GetDimensionsCount F(GetDimensionsCount, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, size_t *))
#define GetDimensions F(GetDimensions, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, int64_t *, size_t))
#define GetTensorShapeElementCount \
    F(GetTensorShapeElementCount, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, size_t *))
#define GetTensorTypeAndShape F(GetTensorTypeAndShape, OrtStatus *(*)(const OrtValue *, OrtTensorTypeAndShapeInfo **))
#define CreateCpuMemoryInfo F(CreateCpuMemoryInfo, OrtStatus *(*)(int, int, OrtMemoryInfo **))
#define ReleaseEnv F(ReleaseEnv, void (*)(OrtEnv *))
#define ReleaseStatus F(ReleaseStatus, void (*)(OrtStatus *))
#define ReleaseMemoryInfo F(ReleaseMemoryInfo, void (*)(OrtMemoryInfo *))
#define ReleaseSession F(ReleaseSession, void (*)(OrtSession *))
#define ReleaseValue F(ReleaseValue, void (*)(OrtValue *))
#define ReleaseTensorTypeAndShapeInfo F(ReleaseTensorTypeAndShapeInfo, void (*)(OrtTensorTypeAndShapeInfo *))
#define ReleaseSessionOptions F(ReleaseSessionOptions, void (*)(OrtSessionOptions *))
#define AddSessionConfigEntry F(AddSessionConfigEntry, OrtStatus *(*)(OrtSessionOptions *, const char *, const char *))

enum { ORT_LOGGING_LEVEL_ERROR = 3, ORT_FAIL = 1, ORT_SEQUENTIAL = 0 };
enum { OrtDeviceAllocator = 0, OrtMemTypeDefault = 0 };

typedef OrtStatus *(*AppendDml)(OrtSessionOptions *, int device_id);
typedef OrtStatus *(*AppendDmlEx)(OrtSessionOptions *, void *dml_device, void *command_queue);

static const OrtApiBase *api_base;
static OrtEnv *env;
static OrtMemoryInfo *cpu_memory;
#ifdef _WIN32
static AppendDml append_dml;
static AppendDmlEx append_dml_ex;
#endif

/* Takes the status; returns 1 (after sending the error) when it was one. */
static int failed(OrtStatus *st, const char *what) {
    if (!st) return 0;
    send_error("%s: %s", what, GetErrorMessage(st));
    ReleaseStatus(st);
    return 1;
}

/* ---- sessions ---------------------------------------------------------------------------------- */

#define MAX_SESSIONS 65536
static OrtSession *sessions[MAX_SESSIONS];
static uint32_t next_session = 1;

static size_t element_size(int type) {
    switch (type) {
    case 1: return 4;  /* float */
    case 2: return 1;  /* uint8 */
    case 3: return 1;  /* int8 */
    case 4: return 2;  /* uint16 */
    case 5: return 2;  /* int16 */
    case 6: return 4;  /* int32 */
    case 7: return 8;  /* int64 */
    case 9: return 1;  /* bool */
    case 10: return 2; /* float16 */
    case 11: return 8; /* double */
    case 12: return 4; /* uint32 */
    case 13: return 8; /* uint64 */
    case 16: return 2; /* bfloat16 */
    default: return 0;
    }
}

#ifdef _WIN32
/* DirectML on a D3D12 device made here. vkd3d reports Int64ShaderOps, which steers DirectML to
 * DXIL-only kernels (Cast to INT64) that vkd3d cannot compile; hiding it makes DirectML pick
 * kernels that work (host_common.h's CheckFeatureSupport hook). What it hides: ORT_HOST_HIDE, a
 * comma list of int64 (the default), wave, fp16, double, sm51 (cap the shader model at 5.1),
 * none. ORT_HOST_TRACE=1 logs each query to stderr. */
static void read_hide_list(void) {
    const char *list = getenv("ORT_HOST_HIDE");
    trace_features = getenv("ORT_HOST_TRACE") != NULL;
    hide_int64 = 1;
    if (!list) return;
    hide_int64 = strstr(list, "int64") != NULL;
    hide_wave = strstr(list, "wave") != NULL;
    hide_fp16 = strstr(list, "fp16") != NULL;
    hide_double = strstr(list, "double") != NULL;
    cap_sm51 = strstr(list, "sm51") != NULL;
}

static void *dml_device, *dml_queue;

static const char *dml_device_hooked(void) {
    static char error[512];
    if (dml_device) return NULL;
    read_hide_list();
    ID3D12Device *device = NULL;
    ID3D12CommandQueue *queue = NULL;
    void *out = NULL;
    const char *why = create_d3d12_device(D3D12_COMMAND_LIST_TYPE_DIRECT, &device, &queue, NULL, 0, error, sizeof error);
    if (!why) why = create_dml_device(device, &out, error, sizeof error);
    if (why) return why;
    dml_device = out;
    dml_queue = queue;
    return NULL;
}
#endif

/* Session options for LOAD and LOADPATH: the flags' EP and settings, then the entries given
 * ("key\0value\0" pairs in `entries`, `n` of them) and ORT_HOST_CONFIG's. NULL after sending
 * the error. */
static OrtSessionOptions *session_options(uint32_t flags, int log_level, const char *entries, uint32_t n) {
    OrtSessionOptions *opt = NULL;
    if (failed(CreateSessionOptions(&opt), "CreateSessionOptions")) return NULL;
    OrtStatus *st = SetSessionLogSeverityLevel(opt, log_level);
    if (!st && !(flags & 1)) {
        st = AddSessionConfigEntry(opt, "session.disable_cpu_ep_fallback", "1");
        if (!st) st = DisableMemPattern(opt);
        if (!st) st = SetSessionExecutionMode(opt, ORT_SEQUENTIAL);
        if (!st && (flags & 4)) st = AddSessionConfigEntry(opt, "ep.dml.disable_graph_fusion", "1");
    }
    /* The request's entries, then ORT_HOST_CONFIG="key=value;key=value" (experiments): both after
     * the defaults above, which they may override. */
    for (uint32_t i = 0; i < n && !st; i++) {
        const char *key = entries, *value = entries + strlen(entries) + 1;
        st = AddSessionConfigEntry(opt, key, value);
        entries = value + strlen(value) + 1;
    }
    const char *extra = getenv("ORT_HOST_CONFIG");
    if (!st && extra && !(flags & 1)) {
        char more[1024];
        snprintf(more, sizeof more, "%s", extra);
        for (char *e = strtok(more, ";"); e && !st; e = strtok(NULL, ";")) {
            char *eq = strchr(e, '=');
            if (!eq) continue;
            *eq = 0;
            st = AddSessionConfigEntry(opt, e, eq + 1);
        }
    }
    if (!st && !(flags & 1)) {
#ifdef _WIN32
        if (flags & 2) {
            const char *why = dml_device_hooked();
            if (why) {
                ReleaseSessionOptions(opt);
                send_error("DirectML device: %s", why);
                return NULL;
            }
            st = append_dml_ex(opt, dml_device, dml_queue);
        } else {
            st = append_dml(opt, 0);
        }
#else
        st = CreateStatus(ORT_FAIL, "this host was built without DirectML (Linux build): use the CPU flag");
#endif
    }
    if (st) {
        ReleaseSessionOptions(opt);
        failed(st, "session options");
        return NULL;
    }
    return opt;
}

/* Keeps a session that was created (st NULL) and answers with its id and counts. */
static void loaded(OrtStatus *st, OrtSession *session) {
    if (failed(st, "CreateSession")) return;
    size_t n_in = 0, n_out = 0;
    if (failed(SessionGetInputCount(session, &n_in), "SessionGetInputCount") ||
        failed(SessionGetOutputCount(session, &n_out), "SessionGetOutputCount")) {
        ReleaseSession(session);
        return;
    }
    uint32_t id = next_session++;
    sessions[id] = session;
    Buf b = {0};
    put_u8(&b, 0);
    put_u32(&b, id);
    put_u32(&b, (uint32_t)n_in);
    put_u32(&b, (uint32_t)n_out);
    send_response(&b);
    free(b.data);
}

static void do_load(Cur *c) {
    uint32_t flags = get_u32(c);
    if (c->bad) {
        send_error("malformed LOAD request");
        return;
    }
    if (next_session >= MAX_SESSIONS) {
        send_error("too many sessions");
        return;
    }
    OrtSessionOptions *opt = session_options(flags, ORT_LOGGING_LEVEL_ERROR, NULL, 0);
    if (!opt) return;
    OrtSession *session = NULL;
    OrtStatus *st = CreateSessionFromArray(env, c->p, (size_t)(c->end - c->p), opt, &session);
    ReleaseSessionOptions(opt);
    loaded(st, session);
}

static void do_load_path(Cur *c) {
    uint32_t flags = get_u32(c);
    char *path = get_str(c), *folder = get_str(c), *optimized = get_str(c);
    uint32_t level = get_u32(c), n = get_u32(c);
    Buf entries = {0};
    for (uint32_t i = 0; i < n && !c->bad && n <= 256; i++) {
        for (int k = 0; k < 2 && !c->bad; k++) {
            char *s = get_str(c);
            if (s) put(&entries, s, strlen(s) + 1);
            free(s);
        }
    }
    if (c->bad || !path || !folder || !optimized || level > 4 || n > 256) {
        send_error("malformed LOADPATH request");
    } else if (next_session >= MAX_SESSIONS) {
        send_error("too many sessions");
    } else {
        OrtSessionOptions *opt = NULL;
#ifdef _WIN32
        wchar_t wide_path[4096], wide_folder[4096], wide_optimized[4096], before[4096];
        if (!GetCurrentDirectoryW(4096, before)) before[0] = 0;
        if (!MultiByteToWideChar(CP_UTF8, 0, path, -1, wide_path, 4096) ||
            !MultiByteToWideChar(CP_UTF8, 0, folder, -1, wide_folder, 4096) ||
            !MultiByteToWideChar(CP_UTF8, 0, optimized, -1, wide_optimized, 4096))
            send_error("LOADPATH: a path is not UTF-8 or too long");
        else if (!SetCurrentDirectoryW(wide_folder))
            send_error("LOADPATH: cannot enter the folder %s (error %lu)", folder, GetLastError());
        else
            opt = session_options(flags, (int)level, (const char *)entries.data, n);
        const ORTCHAR_T *model = wide_path, *optimized_path = wide_optimized;
#else
        if (chdir(folder) != 0)
            send_error("LOADPATH: cannot enter the folder %s", folder);
        else
            opt = session_options(flags, (int)level, (const char *)entries.data, n);
        const ORTCHAR_T *model = path, *optimized_path = optimized;
#endif
        if (opt && optimized[0] && failed(SetOptimizedModelFilePath(opt, optimized_path), "optimized model path")) {
            ReleaseSessionOptions(opt);
            opt = NULL;
        }
        if (opt) {
            OrtSession *session = NULL;
            OrtStatus *st = CreateSession(env, model, opt, &session);
            ReleaseSessionOptions(opt);
            loaded(st, session);
        }
#ifdef _WIN32
        if (before[0]) SetCurrentDirectoryW(before); /* the folder matters only while the session is made */
#endif
    }
    free(path);
    free(folder);
    free(optimized);
    free(entries.data);
}

static OrtSession *session_of(uint32_t id) { return id > 0 && id < MAX_SESSIONS ? sessions[id] : NULL; }

static void do_run(Cur *c) {
    uint32_t id = get_u32(c);
    OrtSession *session = session_of(id);
    if (!session) {
        send_error("RUN: no session %u", id);
        return;
    }
    uint32_t n = get_u32(c);
    if (c->bad || n > 4096) {
        send_error("malformed RUN request");
        return;
    }
    char **in_names = calloc(n + 1, sizeof *in_names);
    OrtValue **in_values = calloc(n + 1, sizeof *in_values);
    void **in_data = calloc(n + 1, sizeof *in_data);
    char **out_names = NULL;
    OrtValue **outputs = NULL;
    uint32_t m = 0;
    Buf b = {0};
    const char *malformed = NULL;
    int sent = 0;

    for (uint32_t i = 0; i < n && !malformed && !sent; i++) {
        in_names[i] = get_str(c);
        int type = (int)get_u32(c);
        uint32_t rank = get_u32(c);
        if (c->bad || rank > 64) {
            malformed = "malformed input";
            break;
        }
        int64_t dims[64];
        uint64_t count = 1;
        for (uint32_t d = 0; d < rank; d++) {
            dims[d] = (int64_t)get_u64(c);
            count *= (uint64_t)(dims[d] < 0 ? 0 : dims[d]);
        }
        uint64_t nbytes = get_u64(c);
        const uint8_t *bytes = take(c, (size_t)nbytes);
        if (c->bad) {
            malformed = "malformed input";
            break;
        }
        size_t esize = element_size(type);
        if (!esize) {
            send_error("input '%s': ONNX element type %d is not supported by the host", in_names[i], type);
            sent = 1;
            break;
        }
        if (count * esize != nbytes) {
            send_error("input '%s': %llu bytes for %llu elements of %zu bytes", in_names[i],
                       (unsigned long long)nbytes, (unsigned long long)count, esize);
            sent = 1;
            break;
        }
        in_data[i] = malloc(nbytes ? (size_t)nbytes : 16); /* aligned copy */
        memcpy(in_data[i], bytes, (size_t)nbytes);
        if (failed(CreateTensorWithDataAsOrtValue(cpu_memory, in_data[i], (size_t)nbytes, dims, rank, type,
                                                  &in_values[i]),
                   in_names[i])) {
            sent = 1;
            break;
        }
    }
    if (!malformed && !sent) {
        m = get_u32(c);
        if (c->bad || m > 4096) malformed = "malformed output list";
    }
    if (!malformed && !sent) {
        out_names = calloc(m + 1, sizeof *out_names);
        outputs = calloc(m + 1, sizeof *outputs);
        for (uint32_t i = 0; i < m; i++) out_names[i] = get_str(c);
        if (c->bad) malformed = "malformed output names";
    }
    if (!malformed && !sent) {
        OrtStatus *st = Run(session, NULL, (const char *const *)in_names, (const OrtValue *const *)in_values, n,
                            (const char *const *)out_names, m, outputs);
        if (failed(st, "Run")) sent = 1;
    }
    if (!malformed && !sent) {
        put_u8(&b, 0);
        put_u32(&b, m);
        for (uint32_t i = 0; i < m && !sent; i++) {
            OrtTensorTypeAndShapeInfo *info = NULL;
            int type = 0;
            size_t rank = 0, count = 0;
            int64_t dims[64];
            void *data = NULL;
            if (failed(GetTensorTypeAndShape(outputs[i], &info), "GetTensorTypeAndShape")) {
                sent = 1;
                break;
            }
            OrtStatus *st = GetTensorElementType(info, &type);
            if (!st) st = GetDimensionsCount(info, &rank);
            if (!st && rank > 64) st = CreateStatus(ORT_FAIL, "output rank above 64");
            if (!st) st = GetDimensions(info, dims, rank);
            if (!st) st = GetTensorShapeElementCount(info, &count);
            ReleaseTensorTypeAndShapeInfo(info);
            size_t esize = element_size(type);
            if (!st && !esize) st = CreateStatus(ORT_FAIL, "output element type not supported by the host");
            if (!st && count) st = GetTensorMutableData(outputs[i], &data);
            if (failed(st, out_names[i])) {
                sent = 1;
                break;
            }
            put_u32(&b, (uint32_t)type);
            put_u32(&b, (uint32_t)rank);
            put(&b, dims, rank * sizeof(int64_t));
            put_u64(&b, (uint64_t)(count * esize));
            if (count) put(&b, data, count * esize);
        }
        if (!sent) send_response(&b);
        sent = 1;
    }
    if (malformed) send_error("%s", malformed);
    for (uint32_t i = 0; i < n; i++) {
        if (in_values[i]) ReleaseValue(in_values[i]);
        free(in_data[i]);
        free(in_names[i]);
    }
    if (outputs)
        for (uint32_t i = 0; i < m; i++)
            if (outputs[i]) ReleaseValue(outputs[i]);
    if (out_names)
        for (uint32_t i = 0; i < m; i++) free(out_names[i]);
    free(in_names);
    free(in_values);
    free(in_data);
    free(out_names);
    free(outputs);
    free(b.data);
}

static void do_free(Cur *c) {
    uint32_t id = get_u32(c);
    OrtSession *session = session_of(id);
    if (!session) {
        send_error("FREE: no session %u", id);
        return;
    }
    ReleaseSession(session);
    sessions[id] = NULL;
    send_ok();
}

static void do_info(void) {
    Buf b = {0};
    put_u8(&b, 0);
    put_str(&b, api_base->GetVersionString());
#ifdef _WIN32
    put_str(&b, "DmlExecutionProvider");
#else
    put_str(&b, "CPUExecutionProvider (native build)");
#endif
    send_response(&b);
    free(b.data);
}

/* ---- start-up ---------------------------------------------------------------------------------- */

static void load_runtime(const char *argv0) {
    typedef const OrtApiBase *(*GetApiBase)(void);
    GetApiBase get_base;
#ifdef _WIN32
    (void)argv0;
    char path[MAX_PATH];
    program_folder(path);
    SetDllDirectoryA(path); /* DirectML.dll next to onnxruntime.dll */
    strncat(path, "onnxruntime.dll", MAX_PATH - strlen(path) - 1);
    HMODULE ort = LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!ort) die("cannot load %s (error %lu)", path, GetLastError());
    get_base = (GetApiBase)(void *)GetProcAddress(ort, "OrtGetApiBase");
    append_dml = (AppendDml)(void *)GetProcAddress(ort, "OrtSessionOptionsAppendExecutionProvider_DML");
    append_dml_ex = (AppendDmlEx)(void *)GetProcAddress(ort, "OrtSessionOptionsAppendExecutionProviderEx_DML");
    if (!get_base || !append_dml || !append_dml_ex) die("%s lacks OrtGetApiBase or the DirectML entry points", path);
#else
    const char *lib = getenv("ORT_HOST_LIBRARY");
    void *ort = dlopen(lib ? lib : "libonnxruntime.so", RTLD_NOW);
    (void)argv0;
    if (!ort) die("%s", dlerror());
    get_base = (GetApiBase)dlsym(ort, "OrtGetApiBase");
    if (!get_base) die("no OrtGetApiBase");
#endif
    api_base = get_base();
    api = api_base->GetApi(API_VERSION);
    if (!api) die("onnxruntime %s does not offer C API version %d", api_base->GetVersionString(), API_VERSION);
    /* The slot table must be the one described above: a status round trip checks the first slots. */
    OrtStatus *probe = CreateStatus(ORT_FAIL, "slot probe");
    if (!probe || GetErrorCode(probe) != ORT_FAIL || strcmp(GetErrorMessage(probe), "slot probe") != 0)
        die("the OrtApi table does not look as expected");
    ReleaseStatus(probe);
    OrtStatus *st = CreateEnv(ORT_LOGGING_LEVEL_ERROR, "dml2onnx", &env);
    if (st) die("CreateEnv: %s", GetErrorMessage(st));
    st = CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &cpu_memory);
    if (st) die("CreateCpuMemoryInfo: %s", GetErrorMessage(st));
}

static int handle(uint8_t opcode, Cur *c) {
    switch (opcode) {
    case 'V': do_info(); return 1;
    case 'L': do_load(c); return 1;
    case 'P': do_load_path(c); return 1;
    case 'R': do_run(c); return 1;
    case 'F': do_free(c); return 1;
    default: return 0;
    }
}

int main(int argc, char **argv) {
    (void)argc;
    proto_init();
    load_runtime(argv[0]);
    fprintf(stderr, "ort_host: ready (onnxruntime %s)\n", api_base->GetVersionString());
    fflush(stderr);
    serve(handle, NULL);
    return 0;
}
