/* host_common.h: what the two Wine host programs (ort_host.c, dml_exec.c) share.
 *
 * Both serve one client over stdin/stdout with the same framing:
 *
 *   request:  u64 length, then `length` bytes: u8 opcode, then the opcode's fields
 *   response: u64 length, then `length` bytes: u8 status (0 ok, 1 error), then fields or the
 *             error text (UTF-8, not terminated)
 *
 * All integers are little-endian. Strings are u32 length + bytes. 'Q' (QUIT) answers nothing
 * and ends the process. After each response the host writes `<HOST_NAME>: served N` (N counts
 * requests) to stderr, so the client knows when everything the request made the Vulkan stack
 * print has arrived (dml2onnx/winhost.py waits for that line).
 *
 * Here: the response buffer and request cursor, the framed I/O and its serving loop, and (on
 * Windows) HRESULT names and the D3D12 device on the first DXGI adapter with CheckFeatureSupport
 * hooked to hide features from DirectML (Int64ShaderOps above all: vkd3d reports it, which steers
 * DirectML to DXIL-only kernels that vkd3d cannot compile), made through vkd3d-dxil.dll (vkd3d 1.14
 * with its DXIL front end, tools/vkd3d-dxil.sh) where that sits next to the program.
 *
 * Define HOST_NAME (the prefix of the host's stderr lines) before including this. Everything is
 * `static inline`, so each program gets its own copy and no warning for what it does not use.
 * The programs' exe names hash this file too (winhost.exe_name(), dmlapi.exe_name()).
 */

#ifndef DML2ONNX_HOST_COMMON_H
#define DML2ONNX_HOST_COMMON_H

#ifndef HOST_NAME
#error "define HOST_NAME before including host_common.h"
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#define COBJMACROS
#include <windows.h>
#include <initguid.h>
#include <fcntl.h>
#include <io.h>
#include <d3d12.h>
#include <dxgi1_4.h>
#else
#include <unistd.h>
#endif

/* ---- growable response buffer and request cursor ------------------------------------------------ */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buf;

static inline void put(Buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            fprintf(stderr, HOST_NAME ": out of memory\n");
            exit(3);
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void put_u8(Buf *b, uint8_t v) { put(b, &v, 1); }
static inline void put_u32(Buf *b, uint32_t v) { put(b, &v, 4); }
static inline void put_u64(Buf *b, uint64_t v) { put(b, &v, 8); }
static inline void put_f64(Buf *b, double v) { put(b, &v, 8); }
static inline void put_str(Buf *b, const char *s) {
    put_u32(b, (uint32_t)strlen(s));
    put(b, s, strlen(s));
}

typedef struct {
    const uint8_t *p, *end;
    int bad;
} Cur;

static inline const uint8_t *take(Cur *c, uint64_t n) {
    if (c->bad || (uint64_t)(c->end - c->p) < n) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    return at;
}
static inline uint8_t get_u8(Cur *c) {
    const uint8_t *p = take(c, 1);
    return p ? *p : 0;
}
static inline uint32_t get_u32(Cur *c) {
    uint32_t v = 0;
    const uint8_t *p = take(c, 4);
    if (p) memcpy(&v, p, 4);
    return v;
}
static inline uint64_t get_u64(Cur *c) {
    uint64_t v = 0;
    const uint8_t *p = take(c, 8);
    if (p) memcpy(&v, p, 8);
    return v;
}
/* A string from the request, copied and terminated (freed by the caller). */
static inline char *get_str(Cur *c) {
    uint32_t n = get_u32(c);
    const uint8_t *p = take(c, n);
    if (!p) return NULL;
    char *s = malloc((size_t)n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* ---- framed I/O ------------------------------------------------------------------------------------ */

static int proto_in = 0, proto_out = 1;

static inline void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, HOST_NAME ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* Reads exactly n bytes from the protocol's stdin or, with `out`, writes them to its stdout.
 * Returns 0 when the pipe ended (or failed) first. */
static inline int move_exact(int out, uint8_t *p, size_t n) {
    while (n) {
        unsigned chunk = n > (1u << 24) ? (1u << 24) : (unsigned)n;
#ifdef _WIN32
        int moved = out ? _write(proto_out, p, chunk) : _read(proto_in, p, chunk);
#else
        ssize_t moved = out ? write(proto_out, p, chunk) : read(proto_in, p, chunk);
#endif
        if (moved <= 0) return 0;
        p += moved;
        n -= (size_t)moved;
    }
    return 1;
}

static inline int read_exact(void *dst, size_t n) { return move_exact(0, dst, n); }

static inline void write_exact(const void *src, size_t n) {
    if (!move_exact(1, (uint8_t *)(uintptr_t)src, n)) {
        fprintf(stderr, HOST_NAME ": the client went away\n");
        exit(2);
    }
}

static inline void send_response(Buf *b) {
    uint64_t n = b->len;
    write_exact(&n, 8);
    write_exact(b->data, b->len);
}

/* An empty success response (status 0, no fields). */
static inline void send_ok(void) {
    Buf b = {0};
    put_u8(&b, 0);
    send_response(&b);
    free(b.data);
}

static inline void send_error(const char *fmt, ...) {
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    Buf b = {0};
    put_u8(&b, 1);
    put(&b, text, strlen(text));
    send_response(&b);
    free(b.data);
}

#ifdef _WIN32
static inline LONG WINAPI on_crash(EXCEPTION_POINTERS *e) {
    fprintf(stderr, HOST_NAME ": crashed: exception 0x%08lx at %p\n", e->ExceptionRecord->ExceptionCode,
            e->ExceptionRecord->ExceptionAddress);
    fflush(stderr);
    return EXCEPTION_EXECUTE_HANDLER;
}
#endif

/* Start-up: crashes reported on stderr (Windows), and the protocol keeps the real stdout while
 * anything else printing to stdout goes to stderr. */
static inline void proto_init(void) {
#ifdef _WIN32
    SetUnhandledExceptionFilter(on_crash);
    SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
    proto_out = _dup(1);
    _dup2(2, 1);
    SetStdHandle(STD_OUTPUT_HANDLE, GetStdHandle(STD_ERROR_HANDLE));
    _setmode(proto_in, _O_BINARY);
    _setmode(proto_out, _O_BINARY);
#else
    proto_out = dup(1);
    dup2(2, 1);
#endif
}

/* Serves requests until the client closes stdin. `handle` answers one request (the opcode and a
 * cursor over its fields) and returns 0 for an opcode it does not know; QUIT is answered here.
 * `after` (or NULL) runs after each request's `served` line. */
static inline void serve(int (*handle)(uint8_t opcode, Cur *c), void (*after)(void)) {
    unsigned served = 0;
    for (;;) {
        uint64_t len;
        if (!read_exact(&len, 8)) break;
        if (len == 0 || len > ((uint64_t)1 << 40)) die("bad request length %llu", (unsigned long long)len);
        uint8_t *req = malloc((size_t)len);
        if (!req) die("out of memory for a request of %llu bytes", (unsigned long long)len);
        if (!read_exact(req, (size_t)len)) die("the client went away mid-request");
        Cur c = {req + 1, req + len, 0};
        if (req[0] == 'Q') {
            send_ok();
            free(req);
            fflush(stderr);
            _exit(0); /* skip DLL teardown: releasing DirectML under Wine is slow and not needed */
        }
        if (!handle(req[0], &c)) send_error("unknown opcode 0x%02x", req[0]);
        free(req);
        /* The client waits for this line before judging the request's stderr output. */
        fprintf(stderr, HOST_NAME ": served %u\n", ++served);
        fflush(stderr);
        if (after) after();
    }
}

/* ---- D3D12 (Windows) ------------------------------------------------------------------------------- */

#ifdef _WIN32
static inline const char *hr_name(HRESULT hr) {
    switch ((uint32_t)hr) {
    case 0x80070057: return " (E_INVALIDARG)";
    case 0x8007000E: return " (E_OUTOFMEMORY)";
    case 0x80004001: return " (E_NOTIMPL)";
    case 0x80004002: return " (E_NOINTERFACE)";
    case 0x80004003: return " (E_POINTER)";
    case 0x80004005: return " (E_FAIL)";
    case 0x887A0004: return " (DXGI_ERROR_UNSUPPORTED)";
    case 0x887A0005: return " (DXGI_ERROR_DEVICE_REMOVED)";
    case 0x887A0006: return " (DXGI_ERROR_DEVICE_HUNG)";
    case 0x887A0007: return " (DXGI_ERROR_DEVICE_RESET)";
    case 0x887A0020: return " (DXGI_ERROR_DRIVER_INTERNAL_ERROR)";
    default: return "";
    }
}

static const GUID IID_IDMLDevice = {0x6dbd6437, 0x96fd, 0x423f, {0xa9, 0x8c, 0xae, 0x5e, 0x7c, 0x2a, 0x57, 0x3f}};
typedef HRESULT(WINAPI *DmlCreateDeviceFn)(ID3D12Device *, UINT flags, REFIID, void **);

/* What the CheckFeatureSupport hook hides from DirectML (set before create_d3d12_device):
 * D3D12_OPTIONS1.Int64ShaderOps and .WaveOps, OPTIONS4.Native16BitShaderOpsSupported,
 * OPTIONS.DoublePrecisionFloatShaderOps, shader models above 5.1; trace_features logs each query. */
static int hide_int64, hide_wave, hide_fp16, hide_double, cap_sm51, trace_features;
static HRESULT(STDMETHODCALLTYPE *real_check_feature_support)(ID3D12Device *, D3D12_FEATURE, void *, UINT);

static inline HRESULT STDMETHODCALLTYPE check_feature_support(ID3D12Device *device, D3D12_FEATURE feature, void *data,
                                                              UINT size) {
    HRESULT hr = real_check_feature_support(device, feature, data, size);
    if (SUCCEEDED(hr) && data) {
        if (feature == D3D12_FEATURE_D3D12_OPTIONS1 && size >= sizeof(D3D12_FEATURE_DATA_D3D12_OPTIONS1)) {
            D3D12_FEATURE_DATA_D3D12_OPTIONS1 *o = data;
            if (hide_int64) o->Int64ShaderOps = FALSE;
            if (hide_wave) o->WaveOps = FALSE;
        } else if (feature == D3D12_FEATURE_D3D12_OPTIONS4 && size >= sizeof(D3D12_FEATURE_DATA_D3D12_OPTIONS4)) {
            if (hide_fp16) ((D3D12_FEATURE_DATA_D3D12_OPTIONS4 *)data)->Native16BitShaderOpsSupported = FALSE;
        } else if (feature == D3D12_FEATURE_D3D12_OPTIONS && size >= sizeof(D3D12_FEATURE_DATA_D3D12_OPTIONS)) {
            if (hide_double) ((D3D12_FEATURE_DATA_D3D12_OPTIONS *)data)->DoublePrecisionFloatShaderOps = FALSE;
        } else if (feature == D3D12_FEATURE_SHADER_MODEL && size >= sizeof(D3D12_FEATURE_DATA_SHADER_MODEL)) {
            D3D12_FEATURE_DATA_SHADER_MODEL *m = data;
            if (cap_sm51 && m->HighestShaderModel > D3D_SHADER_MODEL_5_1) m->HighestShaderModel = D3D_SHADER_MODEL_5_1;
        }
    }
    if (trace_features) {
        fprintf(stderr, HOST_NAME ": CheckFeatureSupport(%d) -> 0x%08lx", (int)feature, hr);
        if (SUCCEEDED(hr) && data)
            for (UINT i = 0; i < size / 4 && i < 8; i++) fprintf(stderr, " %u", ((UINT *)data)[i]);
        fprintf(stderr, "\n");
    }
    return hr;
}

/* The folder of this program, with its trailing separator, into `path` (MAX_PATH chars). */
static inline size_t program_folder(char *path) {
    DWORD len = GetModuleFileNameA(NULL, path, MAX_PATH);
    while (len && path[len - 1] != '\\' && path[len - 1] != '/') len--;
    path[len] = 0;
    return len;
}

/* ---- the DXIL-capable vkd3d (optional) ----------------------------------------------------------------
 *
 * Wine 8's d3d12.dll bundles vkd3d 1.6, whose shader compiler reads only DXBC; DirectML has some
 * kernels only as DXIL (shader model 6). tools/vkd3d-dxil.sh builds vkd3d-dxil.dll (vkd3d 1.14
 * from Debian's wine 10 source, its DXIL front end enabled) next to the host programs. When it is
 * there (and DML2ONNX_VKD3D_DXIL is not 0), the device is created through it with vkd3d's own
 * API, as Wine's d3d12.dll does; everything else (DXGI, DirectML's root-signature serializer)
 * stays Wine's. The declarations below are vkd3d.h's public API structs, declared here. */
struct vkd3d_app_info {
    int type; /* VKD3D_STRUCTURE_TYPE_APPLICATION_INFO = 5 */
    const void *next;
    const char *application_name;
    uint32_t application_version;
    const char *engine_name;
    uint32_t engine_version;
    int api_version; /* VKD3D_API_VERSION_1_2 = 2 */
};
struct vkd3d_instance_info {
    int type; /* VKD3D_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 0 */
    const void *next;
    HRESULT (*pfn_signal_event)(HANDLE event);
    void *(*pfn_create_thread)(void *(*main)(void *), void *data);
    HRESULT (*pfn_join_thread)(void *thread);
    size_t wchar_size;
    void *pfn_vkGetInstanceProcAddr;
    const char *const *instance_extensions;
    uint32_t instance_extension_count;
};
struct vkd3d_device_info {
    int type; /* VKD3D_STRUCTURE_TYPE_DEVICE_CREATE_INFO = 1 */
    const void *next;
    D3D_FEATURE_LEVEL minimum_feature_level;
    void *instance;
    const struct vkd3d_instance_info *instance_create_info;
    void *vk_physical_device;
    const char *const *device_extensions;
    uint32_t device_extension_count;
    IUnknown *parent;
    LUID adapter_luid;
};
typedef HRESULT (*vkd3d_create_device_fn)(const struct vkd3d_device_info *, REFIID, void **);

static int dxil_device; /* the device came from vkd3d-dxil.dll */
/* ID3D12Device5::EnumerateMetaCommands: IUnknown 3, ID3D12Object 4, ID3D12Device 37,
 * ID3D12Device1 3, Device2 1, Device3 3, Device4 6, then Device5's CreateLifetimeTracker,
 * RemoveDevice. */
#define ENUMERATE_META_COMMANDS_SLOT 59
static HRESULT(STDMETHODCALLTYPE *real_enumerate_meta_commands)(void *, UINT *, void *);

static inline HRESULT STDMETHODCALLTYPE enumerate_meta_commands(void *device, UINT *count, void *descs) {
    HRESULT hr = real_enumerate_meta_commands(device, count, descs);
    if (hr == E_NOTIMPL && count) {
        *count = 0;
        hr = S_OK;
    }
    return hr;
}

static inline HRESULT dxil_signal_event(HANDLE event) { return SetEvent(event) ? S_OK : E_FAIL; }

/* The device from vkd3d-dxil.dll next to this program (S_OK), or S_FALSE: that DLL is not there,
 * DML2ONNX_VKD3D_DXIL=0, or it failed (why, in `why`); then Wine's d3d12.dll makes the device. */
static inline HRESULT create_dxil_device(IUnknown *adapter, const DXGI_ADAPTER_DESC1 *desc, ID3D12Device **device,
                                         const char **why) {
    static char text[512];
    const char *setting = getenv("DML2ONNX_VKD3D_DXIL");
    if (setting && !strcmp(setting, "0")) return S_FALSE;
    char path[MAX_PATH];
    size_t len = program_folder(path);
    snprintf(path + len, sizeof path - len, "vkd3d-dxil.dll");
    if (GetFileAttributesA(path) == INVALID_FILE_ATTRIBUTES) return S_FALSE;
    HMODULE dll = LoadLibraryA(path);
    vkd3d_create_device_fn create = dll ? (vkd3d_create_device_fn)(void *)GetProcAddress(dll, "vkd3d_create_device") : NULL;
    if (!create) {
        snprintf(text, sizeof text, "cannot use %s (error %lu): Wine's d3d12.dll instead", path, GetLastError());
        *why = text;
        return S_FALSE;
    }
    static const struct vkd3d_app_info app = {5, NULL, "dml2onnx", 0, NULL, 0, 2};
    struct vkd3d_instance_info instance = {0, &app, dxil_signal_event, NULL, NULL, sizeof(WCHAR), NULL, NULL, 0};
    struct vkd3d_device_info info = {1, NULL, D3D_FEATURE_LEVEL_11_0, NULL, &instance, NULL, NULL, 0, adapter, {0, 0}};
    if (desc) info.adapter_luid = desc->AdapterLuid;
    HRESULT hr = create(&info, &IID_ID3D12Device, (void **)device);
    if (FAILED(hr)) {
        snprintf(text, sizeof text, "vkd3d-dxil.dll: vkd3d_create_device failed: HRESULT 0x%08lx%s: Wine's d3d12.dll instead",
                 hr, hr_name(hr));
        *why = text;
        return S_FALSE;
    }
    dxil_device = 1;
    return S_OK;
}

/* A D3D12 device on the first DXGI adapter (its description into `adapter_name`, `adapter_len`
 * bytes, unless NULL), CheckFeatureSupport hooked when anything is to be hidden or traced, and a
 * command queue of `type` on it. Returns NULL, or why not (in `error`). */
static inline const char *create_d3d12_device(D3D12_COMMAND_LIST_TYPE type, ID3D12Device **device,
                                              ID3D12CommandQueue **queue, char *adapter_name, size_t adapter_len,
                                              char *error, size_t error_len) {
#define FAIL_HR(what) return snprintf(error, error_len, what " failed: HRESULT 0x%08lx%s", hr, hr_name(hr)), error
    IDXGIFactory1 *factory = NULL;
    IDXGIAdapter1 *adapter = NULL;
    HRESULT hr = CreateDXGIFactory1(&IID_IDXGIFactory1, (void **)&factory);
    if (FAILED(hr)) FAIL_HR("CreateDXGIFactory1");
    hr = IDXGIFactory1_EnumAdapters1(factory, 0, &adapter);
    if (FAILED(hr)) {
        IDXGIFactory1_Release(factory);
        FAIL_HR("EnumAdapters1 (no DXGI adapter)");
    }
    DXGI_ADAPTER_DESC1 ad;
    int have_desc = SUCCEEDED(IDXGIAdapter1_GetDesc1(adapter, &ad));
    if (adapter_name && have_desc)
        WideCharToMultiByte(CP_UTF8, 0, ad.Description, -1, adapter_name, (int)adapter_len - 1, NULL, NULL);
    const char *dxil_why = NULL;
    hr = create_dxil_device((IUnknown *)adapter, have_desc ? &ad : NULL, device, &dxil_why);
    if (dxil_why) fprintf(stderr, HOST_NAME ": %s\n", dxil_why);
    if (hr == S_FALSE) /* not used or not there: Wine's own d3d12.dll */
        hr = D3D12CreateDevice((IUnknown *)adapter, D3D_FEATURE_LEVEL_11_0, &IID_ID3D12Device, (void **)device);
    IDXGIAdapter1_Release(adapter);
    IDXGIFactory1_Release(factory);
    if (FAILED(hr)) FAIL_HR("D3D12CreateDevice");
    if (dxil_device) {
        /* vkd3d 1.14's EnumerateMetaCommands is a stub returning E_NOTIMPL, and DMLCreateDevice
         * gives up on that: report no meta commands instead. */
        void **vtable = (void **)(*device)->lpVtbl;
        DWORD old;
        if (VirtualProtect(&vtable[ENUMERATE_META_COMMANDS_SLOT], sizeof(void *), PAGE_READWRITE, &old)) {
            if (vtable[ENUMERATE_META_COMMANDS_SLOT] != (void *)enumerate_meta_commands) {
                real_enumerate_meta_commands = vtable[ENUMERATE_META_COMMANDS_SLOT];
                vtable[ENUMERATE_META_COMMANDS_SLOT] = (void *)enumerate_meta_commands;
            }
            VirtualProtect(&vtable[ENUMERATE_META_COMMANDS_SLOT], sizeof(void *), old, &old);
        }
    }
    if (hide_int64 || hide_wave || hide_fp16 || hide_double || cap_sm51 || trace_features) {
        void **vtable = (void **)(*device)->lpVtbl;
        size_t slot = offsetof(ID3D12DeviceVtbl, CheckFeatureSupport) / sizeof(void *);
        DWORD old;
        if (!VirtualProtect(&vtable[slot], sizeof(void *), PAGE_READWRITE, &old))
            return snprintf(error, error_len, "VirtualProtect failed: %lu", GetLastError()), error;
        if (vtable[slot] != (void *)check_feature_support) {
            real_check_feature_support = vtable[slot];
            vtable[slot] = (void *)check_feature_support;
        }
        VirtualProtect(&vtable[slot], sizeof(void *), old, &old);
    }
    D3D12_COMMAND_QUEUE_DESC qd = {type, 0, D3D12_COMMAND_QUEUE_FLAG_NONE, 0};
    hr = ID3D12Device_CreateCommandQueue(*device, &qd, &IID_ID3D12CommandQueue, (void **)queue);
    if (FAILED(hr)) FAIL_HR("CreateCommandQueue");
    return NULL;
#undef FAIL_HR
}

/* A DirectML device (IDMLDevice) on `device`, from the DirectML.dll next to this program.
 * Returns NULL, or why not (in `error`). */
static inline const char *create_dml_device(ID3D12Device *device, void **dml, char *error, size_t error_len) {
    char path[MAX_PATH];
    size_t len = program_folder(path);
    snprintf(path + len, sizeof path - len, "DirectML.dll");
    HMODULE dll = LoadLibraryA(path);
    if (!dll) return snprintf(error, error_len, "cannot load %s: error %lu", path, GetLastError()), error;
    DmlCreateDeviceFn create = (DmlCreateDeviceFn)(void *)GetProcAddress(dll, "DMLCreateDevice");
    if (!create) return snprintf(error, error_len, "DirectML.dll has no DMLCreateDevice"), error;
    HRESULT hr = create(device, 0, &IID_IDMLDevice, dml);
    if (FAILED(hr)) return snprintf(error, error_len, "DMLCreateDevice failed: HRESULT 0x%08lx%s", hr, hr_name(hr)), error;
    return NULL;
}
#endif /* _WIN32 */

#endif /* DML2ONNX_HOST_COMMON_H */
