/* dml_exec: executes DirectML operator descs with DirectML's own API, as DxDispatch does.
 *
 * A Windows console program (cross-compiled with mingw-w64, run under Wine on Linux, next to
 * DirectML.dll). It makes one D3D12 device on the first DXGI adapter and one DirectML device on
 * it, then serves one client over stdin/stdout with the framing of host_common.h (shared with
 * ort_host.c): u64-length-prefixed requests (u8 opcode, then its fields) and responses (u8
 * status, 0 ok or 1 error, then fields or the error text).
 *
 * All integers are little-endian. Strings are u32 length + bytes. Opcodes:
 *   'V' INFO   -> str adapter description, u32 highest DML_FEATURE_LEVEL DirectML reports,
 *                 u32 options the host runs with (1 = Int64ShaderOps hidden), str why there is
 *                 no device ("" when there is one)
 *   'X' EXEC   u32 DML_EXECUTION_FLAGS,
 *              u32 blob length, blob (the packed desc, dml2onnx/descpack.py), u32 root offset
 *              (its DML_OPERATOR_DESC), u32 r, r x (u32 pointer offset, u32 target offset),
 *              u32 n, n x (u32 flags (1 = owned by DirectML: bound at initialization),
 *                          u64 size (0 = an optional tensor left null), size bytes),
 *              u32 m, m x (u64 size (0 = null), u8 has initial bytes, [size bytes])
 *           -> u32 m, m x (u64 size, bytes),
 *              u32 initializer descriptors, u32 execute descriptors,
 *              u64 temporary bytes, u64 persistent bytes,
 *              6 x f64 ms: CreateOperator, CompileOperator, initializer + resources (+ the
 *              descriptor heap, on the first request), initialize (upload copies + initializer
 *              dispatch), execute (dispatch + readback copies), total
 *
 * Each EXEC: CreateOperator on the rebased blob, CompileOperator, CreateOperatorInitializer; one
 * default-heap UAV buffer per bound tensor (uploaded through an upload heap), temporary and
 * persistent buffers as the binding properties ask; the initializer's binding table (temporary,
 * persistent as its output, OWNED_BY_DML inputs as a buffer array) recorded and run; then the
 * operator's binding table (inputs, outputs, temporary, persistent) recorded with the command
 * recorder, run, and the outputs copied to a readback heap. Each submission waits on a fence.
 *   'G' GRAPH  a whole DML_GRAPH_DESC compiled with IDMLDevice1::CompileGraph (do_graph says how it
 *              is sent), then initialized and run as EXEC runs an operator -> as EXEC
 *   'Q' QUIT   -> (nothing), then the process exits
 *
 * Errors (HRESULTs of D3D12 and DirectML, e.g. E_INVALIDARG when DirectML refuses a desc) come
 * back as error responses naming the call and the HRESULT in hex; the host lives on (unless the
 * device is lost or hangs: then it answers, and exits). After each response the host writes
 * `dml_exec: served N` to stderr, so the client knows when everything the request made the
 * Vulkan stack print has arrived.
 *
 * Options (argv): --hide-int64 hides D3D12_OPTIONS1.Int64ShaderOps from DirectML (vkd3d reports
 * it, which steers DirectML to DXIL-only kernels that vkd3d 1.6 cannot compile);
 * --compute uses a COMPUTE command queue instead of DIRECT.
 *
 * mingw-w64 has no directml.h: the few DirectML types and COM interfaces used are declared here,
 * in the vtable order of Microsoft's DirectML.h.
 */

#define HOST_NAME "dml_exec"
#include "host_common.h"

/* ---- DirectML declarations (DirectML.h) -------------------------------------------------------- */

typedef struct {
    UINT Type;
    const void *Desc;
} DML_OPERATOR_DESC, DML_BINDING_DESC;

typedef struct {
    UINT RequiredDescriptorCount;
    UINT64 TemporaryResourceSize;
    UINT64 PersistentResourceSize;
} DML_BINDING_PROPERTIES;

typedef struct {
    ID3D12Resource *Buffer;
    UINT64 Offset;
    UINT64 SizeInBytes;
} DML_BUFFER_BINDING;

typedef struct {
    UINT BindingCount;
    const DML_BUFFER_BINDING *Bindings;
} DML_BUFFER_ARRAY_BINDING;

enum { DML_BINDING_TYPE_NONE = 0, DML_BINDING_TYPE_BUFFER = 1, DML_BINDING_TYPE_BUFFER_ARRAY = 2 };
enum { DML_FEATURE_FEATURE_LEVELS = 1 };

typedef struct {
    UINT RequestedFeatureLevelCount;
    const UINT *RequestedFeatureLevels;
} DML_FEATURE_QUERY_FEATURE_LEVELS;

typedef struct {
    void *Dispatchable;
    D3D12_CPU_DESCRIPTOR_HANDLE CPUDescriptorHandle;
    D3D12_GPU_DESCRIPTOR_HANDLE GPUDescriptorHandle;
    UINT SizeInDescriptors;
} DML_BINDING_TABLE_DESC;

typedef struct DmlObj DmlObj; /* any DirectML COM object; its vtable type says which */

#define SLOTS_IUNKNOWN                                                   \
    HRESULT(STDMETHODCALLTYPE *QueryInterface)(DmlObj *, REFIID, void **); \
    ULONG(STDMETHODCALLTYPE *AddRef)(DmlObj *);                           \
    ULONG(STDMETHODCALLTYPE *Release)(DmlObj *);
#define SLOTS_IDMLOBJECT                                                                \
    SLOTS_IUNKNOWN                                                                      \
    HRESULT(STDMETHODCALLTYPE *GetPrivateData)(DmlObj *, REFGUID, UINT *, void *);       \
    HRESULT(STDMETHODCALLTYPE *SetPrivateData)(DmlObj *, REFGUID, UINT, const void *);   \
    HRESULT(STDMETHODCALLTYPE *SetPrivateDataInterface)(DmlObj *, REFGUID, IUnknown *); \
    HRESULT(STDMETHODCALLTYPE *SetName)(DmlObj *, LPCWSTR);
#define SLOTS_IDMLDEVICECHILD \
    SLOTS_IDMLOBJECT          \
    HRESULT(STDMETHODCALLTYPE *GetDevice)(DmlObj *, REFIID, void **);
/* A member function returning a struct: MSVC passes the hidden result pointer after `this`. */
#define SLOTS_IDMLDISPATCHABLE \
    SLOTS_IDMLDEVICECHILD      \
    DML_BINDING_PROPERTIES *(STDMETHODCALLTYPE * GetBindingProperties)(DmlObj *, DML_BINDING_PROPERTIES *);

typedef struct {
    SLOTS_IDMLOBJECT
    HRESULT(STDMETHODCALLTYPE *CheckFeatureSupport)(DmlObj *, UINT feature, UINT, const void *, UINT, void *);
    HRESULT(STDMETHODCALLTYPE *CreateOperator)(DmlObj *, const DML_OPERATOR_DESC *, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *CompileOperator)(DmlObj *, DmlObj *op, UINT flags, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *CreateOperatorInitializer)(DmlObj *, UINT, DmlObj *const *, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *CreateCommandRecorder)(DmlObj *, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *CreateBindingTable)(DmlObj *, const DML_BINDING_TABLE_DESC *, REFIID, void **);
    HRESULT(STDMETHODCALLTYPE *Evict)(DmlObj *, UINT, DmlObj *const *);
    HRESULT(STDMETHODCALLTYPE *MakeResident)(DmlObj *, UINT, DmlObj *const *);
    HRESULT(STDMETHODCALLTYPE *GetDeviceRemovedReason)(DmlObj *);
    HRESULT(STDMETHODCALLTYPE *GetParentDevice)(DmlObj *, REFIID, void **);
} IDMLDeviceVtbl;

typedef struct {
    SLOTS_IDMLDISPATCHABLE
} IDMLDispatchableVtbl; /* IDMLCompiledOperator adds nothing */

typedef struct {
    SLOTS_IDMLDISPATCHABLE
    HRESULT(STDMETHODCALLTYPE *Reset)(DmlObj *, UINT, DmlObj *const *);
} IDMLOperatorInitializerVtbl;

typedef struct {
    SLOTS_IDMLDEVICECHILD
    void(STDMETHODCALLTYPE *BindInputs)(DmlObj *, UINT, const DML_BINDING_DESC *);
    void(STDMETHODCALLTYPE *BindOutputs)(DmlObj *, UINT, const DML_BINDING_DESC *);
    void(STDMETHODCALLTYPE *BindTemporaryResource)(DmlObj *, const DML_BINDING_DESC *);
    void(STDMETHODCALLTYPE *BindPersistentResource)(DmlObj *, const DML_BINDING_DESC *);
    HRESULT(STDMETHODCALLTYPE *Reset)(DmlObj *, const DML_BINDING_TABLE_DESC *);
} IDMLBindingTableVtbl;

typedef struct {
    SLOTS_IDMLDEVICECHILD
    void(STDMETHODCALLTYPE *RecordDispatch)(DmlObj *, ID3D12CommandList *, DmlObj *dispatchable, DmlObj *table);
} IDMLCommandRecorderVtbl;

/* IDMLDevice1 adds CompileGraph after IDMLDevice's slots. */
typedef struct {
    IDMLDeviceVtbl base;
    HRESULT(STDMETHODCALLTYPE *CompileGraph)(DmlObj *, const void *desc, UINT flags, REFIID, void **);
} IDMLDevice1Vtbl;

enum { DML_GRAPH_NODE_TYPE_OPERATOR = 1 };
enum { DML_GRAPH_EDGE_TYPE_INPUT = 1, DML_GRAPH_EDGE_TYPE_OUTPUT = 2, DML_GRAPH_EDGE_TYPE_INTERMEDIATE = 3 };

typedef struct {
    DmlObj *Operator;
    const char *Name;
} DML_OPERATOR_GRAPH_NODE_DESC;

typedef struct {
    UINT Type;
    const void *Desc;
} DML_GRAPH_NODE_DESC, DML_GRAPH_EDGE_DESC;

typedef struct {
    UINT GraphInputIndex, ToNodeIndex, ToNodeInputIndex;
    const char *Name;
} DML_INPUT_GRAPH_EDGE_DESC;

typedef struct {
    UINT FromNodeIndex, FromNodeOutputIndex, GraphOutputIndex;
    const char *Name;
} DML_OUTPUT_GRAPH_EDGE_DESC;

typedef struct {
    UINT FromNodeIndex, FromNodeOutputIndex, ToNodeIndex, ToNodeInputIndex;
    const char *Name;
} DML_INTERMEDIATE_GRAPH_EDGE_DESC;

typedef struct {
    UINT InputCount, OutputCount, NodeCount;
    const DML_GRAPH_NODE_DESC *Nodes;
    UINT InputEdgeCount;
    const DML_GRAPH_EDGE_DESC *InputEdges;
    UINT OutputEdgeCount;
    const DML_GRAPH_EDGE_DESC *OutputEdges;
    UINT IntermediateEdgeCount;
    const DML_GRAPH_EDGE_DESC *IntermediateEdges;
} DML_GRAPH_DESC;

struct DmlObj {
    const void *vtbl;
};

#define VT(obj, type) ((const type *)(obj)->vtbl)

static const GUID IID_IDMLDevice1 = {0xa0884f9a, 0xd2be, 0x4355, {0xaa, 0x5d, 0x59, 0x01, 0x28, 0x1a, 0xd1, 0xd2}};
static const GUID IID_IDMLOperator = {0x26caae7a, 0x3081, 0x4633, {0x95, 0x81, 0x22, 0x6f, 0xbe, 0x57, 0x69, 0x5d}};
static const GUID IID_IDMLCompiledOperator = {
    0x6b15e56a, 0xbf5c, 0x4902, {0x92, 0xd8, 0xda, 0x3a, 0x65, 0x0a, 0xfe, 0xa4}};
static const GUID IID_IDMLOperatorInitializer = {
    0x427c1113, 0x435c, 0x469c, {0x86, 0x76, 0x4d, 0x5d, 0xd0, 0x72, 0xf8, 0x13}};
static const GUID IID_IDMLBindingTable = {0x29c687dc, 0xde74, 0x4e3b, {0xab, 0x00, 0x11, 0x68, 0xf2, 0xfc, 0x3c, 0xfc}};
static const GUID IID_IDMLCommandRecorder = {
    0xe6857a76, 0x2e3e, 0x4fdd, {0xbf, 0xf4, 0x5d, 0x2b, 0xa1, 0x0f, 0xb4, 0x53}};

static void release(void *obj) {
    if (obj) ((const IUnknownVtbl *)((DmlObj *)obj)->vtbl)->Release((IUnknown *)obj);
}

/* ---- the device ---------------------------------------------------------------------------------- */

static struct {
    ID3D12Device *d3d;
    ID3D12CommandQueue *queue;
    ID3D12CommandAllocator *allocator;
    ID3D12GraphicsCommandList *list;
    ID3D12Fence *fence;
    UINT64 fence_value;
    HANDLE event;
    DmlObj *dml;
    DmlObj *recorder;
    ID3D12DescriptorHeap *heap;
    UINT heap_size;
    UINT descriptor_size;
    UINT max_level;
    char adapter[256];
    char error[1024]; /* why there is no device, or why it broke */
    int compute;
    int broken; /* the device is lost or hung: the process ends after answering */
} g;

#define FAIL_INIT(...) return (void)snprintf(g.error, sizeof g.error, __VA_ARGS__)

static void init_device(void) {
    D3D12_COMMAND_LIST_TYPE type = g.compute ? D3D12_COMMAND_LIST_TYPE_COMPUTE : D3D12_COMMAND_LIST_TYPE_DIRECT;
    if (create_d3d12_device(type, &g.d3d, &g.queue, g.adapter, sizeof g.adapter, g.error, sizeof g.error)) return;
    HRESULT hr = ID3D12Device_CreateCommandAllocator(g.d3d, type, &IID_ID3D12CommandAllocator, (void **)&g.allocator);
    if (FAILED(hr)) FAIL_INIT("CreateCommandAllocator failed: HRESULT 0x%08lx%s", hr, hr_name(hr));
    hr = ID3D12Device_CreateCommandList(g.d3d, 0, type, g.allocator, NULL, &IID_ID3D12GraphicsCommandList,
                                        (void **)&g.list);
    if (FAILED(hr)) FAIL_INIT("CreateCommandList failed: HRESULT 0x%08lx%s", hr, hr_name(hr));
    ID3D12GraphicsCommandList_Close(g.list);
    hr = ID3D12Device_CreateFence(g.d3d, 0, D3D12_FENCE_FLAG_NONE, &IID_ID3D12Fence, (void **)&g.fence);
    if (FAILED(hr)) FAIL_INIT("CreateFence failed: HRESULT 0x%08lx%s", hr, hr_name(hr));
    g.event = CreateEventA(NULL, FALSE, FALSE, NULL);
    g.descriptor_size = ID3D12Device_GetDescriptorHandleIncrementSize(g.d3d, D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV);

    void *out = NULL;
    if (create_dml_device(g.d3d, &out, g.error, sizeof g.error)) return;
    g.dml = out;
    hr = VT(g.dml, IDMLDeviceVtbl)->CreateCommandRecorder(g.dml, &IID_IDMLCommandRecorder, &out);
    if (FAILED(hr)) FAIL_INIT("CreateCommandRecorder failed: HRESULT 0x%08lx%s", hr, hr_name(hr));
    g.recorder = out;

    static const UINT levels[] = {0x1000, 0x2000, 0x2100, 0x3000, 0x3100, 0x4000, 0x4100, 0x5000,
                                  0x5100, 0x5200, 0x6000, 0x6100, 0x6200, 0x6300, 0x6400};
    DML_FEATURE_QUERY_FEATURE_LEVELS q = {sizeof levels / sizeof levels[0], levels};
    UINT max_level = 0;
    if (SUCCEEDED(VT(g.dml, IDMLDeviceVtbl)
                      ->CheckFeatureSupport(g.dml, DML_FEATURE_FEATURE_LEVELS, sizeof q, &q, sizeof max_level, &max_level)))
        g.max_level = max_level;
}

/* Submits the recorded list and waits for it. Returns NULL or what went wrong. */
static const char *submit_and_wait(void) {
    static char why[512];
    HRESULT hr = ID3D12GraphicsCommandList_Close(g.list);
    if (FAILED(hr)) return snprintf(why, sizeof why, "command list Close failed: HRESULT 0x%08lx%s", hr, hr_name(hr)), why;
    ID3D12CommandList *lists[] = {(ID3D12CommandList *)g.list};
    ID3D12CommandQueue_ExecuteCommandLists(g.queue, 1, lists);
    hr = ID3D12CommandQueue_Signal(g.queue, g.fence, ++g.fence_value);
    if (FAILED(hr)) return snprintf(why, sizeof why, "queue Signal failed: HRESULT 0x%08lx%s", hr, hr_name(hr)), why;
    if (ID3D12Fence_GetCompletedValue(g.fence) < g.fence_value) {
        ID3D12Fence_SetEventOnCompletion(g.fence, g.fence_value, g.event);
        if (WaitForSingleObject(g.event, 300000) != WAIT_OBJECT_0) {
            g.broken = 1;
            snprintf(g.error, sizeof g.error, "the GPU did not finish a submission within 300 s");
            return g.error;
        }
    }
    hr = ID3D12Device_GetDeviceRemovedReason(g.d3d);
    if (FAILED(hr)) {
        g.broken = 1;
        snprintf(g.error, sizeof g.error, "the D3D12 device was removed: HRESULT 0x%08lx%s", hr, hr_name(hr));
        return g.error;
    }
    return NULL;
}

static const char *begin_list(void) {
    static char why[512];
    HRESULT hr = ID3D12CommandAllocator_Reset(g.allocator);
    if (SUCCEEDED(hr)) hr = ID3D12GraphicsCommandList_Reset(g.list, g.allocator, NULL);
    if (FAILED(hr)) return snprintf(why, sizeof why, "command list Reset failed: HRESULT 0x%08lx%s", hr, hr_name(hr)), why;
    return NULL;
}

static HRESULT make_buffer(UINT64 size, D3D12_HEAP_TYPE heap, D3D12_RESOURCE_STATES state, ID3D12Resource **out) {
    D3D12_HEAP_PROPERTIES hp = {heap, D3D12_CPU_PAGE_PROPERTY_UNKNOWN, D3D12_MEMORY_POOL_UNKNOWN, 0, 0};
    D3D12_RESOURCE_DESC rd = {0};
    rd.Dimension = D3D12_RESOURCE_DIMENSION_BUFFER;
    rd.Width = size < 4 ? 4 : (size + 3) & ~(UINT64)3;
    rd.Height = 1;
    rd.DepthOrArraySize = 1;
    rd.MipLevels = 1;
    rd.Format = DXGI_FORMAT_UNKNOWN;
    rd.SampleDesc.Count = 1;
    rd.Layout = D3D12_TEXTURE_LAYOUT_ROW_MAJOR;
    rd.Flags = heap == D3D12_HEAP_TYPE_DEFAULT ? D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS : D3D12_RESOURCE_FLAG_NONE;
    return ID3D12Device_CreateCommittedResource(g.d3d, &hp, D3D12_HEAP_FLAG_NONE, &rd, state, NULL,
                                                &IID_ID3D12Resource, (void **)out);
}

static void transition(ID3D12Resource *r, D3D12_RESOURCE_STATES from, D3D12_RESOURCE_STATES to) {
    D3D12_RESOURCE_BARRIER b = {0};
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_TRANSITION;
    b.Transition.pResource = r;
    b.Transition.Subresource = D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES;
    b.Transition.StateBefore = from;
    b.Transition.StateAfter = to;
    ID3D12GraphicsCommandList_ResourceBarrier(g.list, 1, &b);
}

static void uav_barrier(void) {
    D3D12_RESOURCE_BARRIER b = {0};
    b.Type = D3D12_RESOURCE_BARRIER_TYPE_UAV;
    b.UAV.pResource = NULL;
    ID3D12GraphicsCommandList_ResourceBarrier(g.list, 1, &b);
}

static double now_ms(void) {
    static LARGE_INTEGER freq;
    LARGE_INTEGER t;
    if (!freq.QuadPart) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t);
    return (double)t.QuadPart * 1000.0 / (double)freq.QuadPart;
}

/* ---- requests ------------------------------------------------------------------------------------ */

static void do_info(void) {
    Buf b = {0};
    put_u8(&b, 0);
    put_str(&b, g.adapter);
    put_u32(&b, g.max_level);
    put_u32(&b, (uint32_t)(hide_int64 ? 1 : 0));
    put_str(&b, g.error);
    send_response(&b);
    free(b.data);
}

#define MAX_TENSORS 65536
#define MAX_NODES 65536

typedef struct {
    uint32_t flags;
    uint64_t size;
    const uint8_t *data; /* NULL: no initial bytes */
    ID3D12Resource *buffer;
    UINT64 upload_at;
} Tensor;

/* A packed desc (dml2onnx/descpack.py): u32 blob length, blob, u32 root offset (its
 * DML_OPERATOR_DESC), u32 r, r x (u32 pointer offset, u32 target offset). Returns the blob copied
 * to 16-byte-aligned memory with its pointers rebased (_aligned_free it), or NULL with `err`. */
static uint8_t *read_desc(Cur *c, uint32_t *root, char *err, size_t err_len) {
    uint32_t blob_len = get_u32(c);
    const uint8_t *blob_in = take(c, blob_len);
    *root = get_u32(c);
    uint32_t n_reloc = get_u32(c);
    const uint8_t *relocs = take(c, (uint64_t)n_reloc * 8);
    if (c->bad) return snprintf(err, err_len, "malformed request (desc)"), NULL;
    if ((uint64_t)*root + 16 > blob_len)
        return snprintf(err, err_len, "root offset %u outside the %u-byte blob", *root, blob_len), NULL;
    uint8_t *blob = _aligned_malloc(blob_len ? blob_len : 1, 16);
    if (!blob) return snprintf(err, err_len, "out of memory for a %u-byte desc", blob_len), NULL;
    memcpy(blob, blob_in, blob_len);
    for (uint32_t i = 0; i < n_reloc; i++) {
        uint32_t at, target;
        memcpy(&at, relocs + 8 * i, 4);
        memcpy(&target, relocs + 8 * i + 4, 4);
        if ((uint64_t)at + 8 > blob_len || target >= blob_len || (at & 7)) {
            _aligned_free(blob);
            return snprintf(err, err_len, "relocation %u (%u -> %u) outside the %u-byte blob", i, at, target, blob_len), NULL;
        }
        uint64_t p = (uint64_t)(uintptr_t)(blob + target);
        memcpy(blob + at, &p, 8);
    }
    return blob;
}

/* The tensors of a request: u32 n, n x (u32 flags (1 = owned by DirectML: bound at
 * initialization), u64 size (0 = a null tensor), size bytes), u32 m, m x (u64 size (0 = null),
 * u8 has initial bytes, [size bytes]). 0 when malformed (the arrays may be allocated: free them). */
static int read_tensors(Cur *c, Tensor **ins, uint32_t *n_in, Tensor **outs, uint32_t *n_out) {
    *n_in = get_u32(c);
    if (c->bad || *n_in > MAX_TENSORS) return 0;
    *ins = calloc(*n_in + 1, sizeof **ins);
    for (uint32_t i = 0; i < *n_in && !c->bad; i++) {
        (*ins)[i].flags = get_u32(c);
        (*ins)[i].size = get_u64(c);
        (*ins)[i].data = take(c, (*ins)[i].size);
    }
    *n_out = get_u32(c);
    if (c->bad || *n_out > MAX_TENSORS) return 0;
    *outs = calloc(*n_out + 1, sizeof **outs);
    for (uint32_t i = 0; i < *n_out && !c->bad; i++) {
        (*outs)[i].size = get_u64(c);
        (*outs)[i].data = get_u8(c) ? take(c, (*outs)[i].size) : NULL;
    }
    return !c->bad && c->p == c->end;
}

#define CHECK(call, what)                                                                 \
    do {                                                                                  \
        hr = (call);                                                                      \
        if (FAILED(hr)) {                                                                 \
            snprintf(err, sizeof err, "%s failed: HRESULT 0x%08lx%s", what, hr, hr_name(hr)); \
            goto done;                                                                    \
        }                                                                                 \
    } while (0)
#define CHECK_WHY(expr)                                   \
    do {                                                  \
        if ((why = (expr)) != NULL) {                     \
            snprintf(err, sizeof err, "%s", why);         \
            goto done;                                    \
        }                                                 \
    } while (0)

/* Initializes and runs a compiled operator (or graph) on the tensors and answers the request:
 * the outputs and the statistics of EXEC. `times` holds the create and compile times so far. */
static void run_compiled(DmlObj *compiled, Tensor *ins, uint32_t n_in, Tensor *outs, uint32_t n_out, double t_start,
                         double t_create, double t_compile) {
    const IDMLDeviceVtbl *dev = VT(g.dml, IDMLDeviceVtbl);
    DmlObj *init = NULL, *init_table = NULL, *exec_table = NULL;
    ID3D12DescriptorHeap *heap = NULL;
    ID3D12Resource *temp = NULL, *persistent = NULL, *upload = NULL, *readback = NULL;
    char err[2048] = "";
    double t_prepare = 0, t_init = 0, t_exec = 0;
    DML_BINDING_PROPERTIES ip = {0}, ep = {0};
    const char *why;
    HRESULT hr;
    void *out;
    double t2 = now_ms();
    DML_BUFFER_BINDING *owned = calloc(n_in + 1, sizeof *owned), *in_bb = calloc(n_in + 1, sizeof *in_bb);
    DML_BUFFER_BINDING *out_bb = calloc(n_out + 1, sizeof *out_bb);
    DML_BINDING_DESC *in_bd = calloc(n_in + 1, sizeof *in_bd), *out_bd = calloc(n_out + 1, sizeof *out_bd);
    if (!owned || !in_bb || !out_bb || !in_bd || !out_bd) {
        snprintf(err, sizeof err, "out of memory for %u bindings", n_in + n_out);
        goto done;
    }
    CHECK(dev->CreateOperatorInitializer(g.dml, 1, &compiled, &IID_IDMLOperatorInitializer, &out),
          "IDMLDevice::CreateOperatorInitializer");
    init = out;
    VT(init, IDMLDispatchableVtbl)->GetBindingProperties(init, &ip);
    VT(compiled, IDMLDispatchableVtbl)->GetBindingProperties(compiled, &ep);

    /* Resources: one default-heap UAV buffer per tensor, one upload and one readback buffer. */
    UINT64 upload_size = 0, readback_size = 0;
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i].size) ins[i].upload_at = upload_size, upload_size += (ins[i].size + 255) & ~(UINT64)255;
    for (uint32_t i = 0; i < n_out; i++) {
        if (outs[i].size && outs[i].data)
            outs[i].upload_at = upload_size, upload_size += (outs[i].size + 255) & ~(UINT64)255;
        readback_size += (outs[i].size + 255) & ~(UINT64)255;
    }
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i].size) CHECK(make_buffer(ins[i].size, D3D12_HEAP_TYPE_DEFAULT, D3D12_RESOURCE_STATE_COPY_DEST,
                                           &ins[i].buffer), "CreateCommittedResource (input)");
    for (uint32_t i = 0; i < n_out; i++)
        if (outs[i].size) CHECK(make_buffer(outs[i].size, D3D12_HEAP_TYPE_DEFAULT, D3D12_RESOURCE_STATE_COPY_DEST,
                                            &outs[i].buffer), "CreateCommittedResource (output)");
    UINT64 temp_size = ip.TemporaryResourceSize > ep.TemporaryResourceSize ? ip.TemporaryResourceSize
                                                                           : ep.TemporaryResourceSize;
    if (temp_size)
        CHECK(make_buffer(temp_size, D3D12_HEAP_TYPE_DEFAULT, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, &temp),
              "CreateCommittedResource (temporary)");
    if (ep.PersistentResourceSize)
        CHECK(make_buffer(ep.PersistentResourceSize, D3D12_HEAP_TYPE_DEFAULT, D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                          &persistent), "CreateCommittedResource (persistent)");
    if (upload_size) {
        CHECK(make_buffer(upload_size, D3D12_HEAP_TYPE_UPLOAD, D3D12_RESOURCE_STATE_GENERIC_READ, &upload),
              "CreateCommittedResource (upload)");
        uint8_t *mapped = NULL;
        D3D12_RANGE none = {0, 0};
        CHECK(ID3D12Resource_Map(upload, 0, &none, (void **)&mapped), "Map (upload)");
        for (uint32_t i = 0; i < n_in; i++)
            if (ins[i].size) memcpy(mapped + ins[i].upload_at, ins[i].data, ins[i].size);
        for (uint32_t i = 0; i < n_out; i++)
            if (outs[i].size && outs[i].data) memcpy(mapped + outs[i].upload_at, outs[i].data, outs[i].size);
        ID3D12Resource_Unmap(upload, 0, NULL);
    }
    if (readback_size)
        CHECK(make_buffer(readback_size, D3D12_HEAP_TYPE_READBACK, D3D12_RESOURCE_STATE_COPY_DEST, &readback),
              "CreateCommittedResource (readback)");

    /* One shader-visible descriptor heap, kept between requests (vkd3d takes ~0.6 s to make one
     * on lavapipe) and grown when a request needs more descriptors than it has. */
    UINT n_desc = ip.RequiredDescriptorCount + ep.RequiredDescriptorCount;
    if (!g.heap || n_desc > g.heap_size) {
        release(g.heap);
        g.heap = NULL;
        UINT size = g.heap_size ? g.heap_size : 1024;
        while (size < n_desc) size *= 2;
        D3D12_DESCRIPTOR_HEAP_DESC hd = {D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV, size,
                                         D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE, 0};
        CHECK(ID3D12Device_CreateDescriptorHeap(g.d3d, &hd, &IID_ID3D12DescriptorHeap, (void **)&g.heap),
              "CreateDescriptorHeap");
        g.heap_size = size;
    }
    heap = g.heap;
    D3D12_CPU_DESCRIPTOR_HANDLE cpu;
    D3D12_GPU_DESCRIPTOR_HANDLE gpu;
    heap->lpVtbl->GetCPUDescriptorHandleForHeapStart(heap, &cpu);
    heap->lpVtbl->GetGPUDescriptorHandleForHeapStart(heap, &gpu);

    DML_BUFFER_BINDING temp_bb = {temp, 0, temp_size}, pers_bb = {persistent, 0, ep.PersistentResourceSize};
    DML_BINDING_DESC temp_bd = {DML_BINDING_TYPE_BUFFER, &temp_bb}, pers_bd = {DML_BINDING_TYPE_BUFFER, &pers_bb};
    DML_BINDING_DESC none_bd = {DML_BINDING_TYPE_NONE, NULL};

    /* 1. Uploads and the operator initializer. */
    t_prepare = now_ms() - t2;
    CHECK_WHY(begin_list());
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i].size) ID3D12GraphicsCommandList_CopyBufferRegion(g.list, ins[i].buffer, 0, upload, ins[i].upload_at,
                                                                    ins[i].size);
    for (uint32_t i = 0; i < n_out; i++)
        if (outs[i].size && outs[i].data)
            ID3D12GraphicsCommandList_CopyBufferRegion(g.list, outs[i].buffer, 0, upload, outs[i].upload_at, outs[i].size);
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i].size) transition(ins[i].buffer, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    for (uint32_t i = 0; i < n_out; i++)
        if (outs[i].size)
            transition(outs[i].buffer, D3D12_RESOURCE_STATE_COPY_DEST, D3D12_RESOURCE_STATE_UNORDERED_ACCESS);
    ID3D12GraphicsCommandList_SetDescriptorHeaps(g.list, 1, &heap);

    DML_BINDING_TABLE_DESC itd = {init, cpu, gpu, ip.RequiredDescriptorCount};
    CHECK(dev->CreateBindingTable(g.dml, &itd, &IID_IDMLBindingTable, &out), "IDMLDevice::CreateBindingTable (initializer)");
    init_table = out;
    const IDMLBindingTableVtbl *bt = VT(init_table, IDMLBindingTableVtbl);
    if (ip.TemporaryResourceSize) bt->BindTemporaryResource(init_table, &temp_bd);
    if (persistent) bt->BindOutputs(init_table, 1, &pers_bd);
    int any_owned = 0;
    for (uint32_t i = 0; i < n_in; i++) {
        int is_owned = (ins[i].flags & 1) && ins[i].buffer;
        owned[i].Buffer = is_owned ? ins[i].buffer : NULL;
        owned[i].Offset = 0;
        owned[i].SizeInBytes = is_owned ? ins[i].size : 0;
        any_owned |= is_owned;
    }
    DML_BUFFER_ARRAY_BINDING owned_array = {n_in, owned};
    DML_BINDING_DESC owned_bd = {DML_BINDING_TYPE_BUFFER_ARRAY, &owned_array};
    if (any_owned) bt->BindInputs(init_table, 1, &owned_bd);
    VT(g.recorder, IDMLCommandRecorderVtbl)
        ->RecordDispatch(g.recorder, (ID3D12CommandList *)g.list, init, init_table);
    uav_barrier();
    double t3 = now_ms();
    CHECK_WHY(submit_and_wait());
    double t4 = now_ms();
    t_init = t4 - t3;

    /* 2. The operator, then the outputs to the readback buffer. */
    CHECK_WHY(begin_list());
    ID3D12GraphicsCommandList_SetDescriptorHeaps(g.list, 1, &heap);
    D3D12_CPU_DESCRIPTOR_HANDLE cpu2 = {cpu.ptr + (SIZE_T)ip.RequiredDescriptorCount * g.descriptor_size};
    D3D12_GPU_DESCRIPTOR_HANDLE gpu2 = {gpu.ptr + (UINT64)ip.RequiredDescriptorCount * g.descriptor_size};
    DML_BINDING_TABLE_DESC etd = {compiled, cpu2, gpu2, ep.RequiredDescriptorCount};
    CHECK(dev->CreateBindingTable(g.dml, &etd, &IID_IDMLBindingTable, &out), "IDMLDevice::CreateBindingTable (operator)");
    exec_table = out;
    bt = VT(exec_table, IDMLBindingTableVtbl);
    for (uint32_t i = 0; i < n_in; i++) {
        in_bb[i] = (DML_BUFFER_BINDING){ins[i].buffer, 0, ins[i].size};
        in_bd[i] = (ins[i].buffer && !(ins[i].flags & 1)) ? (DML_BINDING_DESC){DML_BINDING_TYPE_BUFFER, &in_bb[i]} : none_bd;
    }
    for (uint32_t i = 0; i < n_out; i++) {
        out_bb[i] = (DML_BUFFER_BINDING){outs[i].buffer, 0, outs[i].size};
        out_bd[i] = outs[i].buffer ? (DML_BINDING_DESC){DML_BINDING_TYPE_BUFFER, &out_bb[i]} : none_bd;
    }
    bt->BindInputs(exec_table, n_in, in_bd);
    bt->BindOutputs(exec_table, n_out, out_bd);
    if (ep.TemporaryResourceSize) bt->BindTemporaryResource(exec_table, &temp_bd);
    if (persistent) bt->BindPersistentResource(exec_table, &pers_bd);
    VT(g.recorder, IDMLCommandRecorderVtbl)
        ->RecordDispatch(g.recorder, (ID3D12CommandList *)g.list, compiled, exec_table);
    uav_barrier();
    UINT64 at = 0;
    for (uint32_t i = 0; i < n_out; i++) {
        if (outs[i].size) {
            transition(outs[i].buffer, D3D12_RESOURCE_STATE_UNORDERED_ACCESS, D3D12_RESOURCE_STATE_COPY_SOURCE);
            ID3D12GraphicsCommandList_CopyBufferRegion(g.list, readback, at, outs[i].buffer, 0, outs[i].size);
        }
        at += (outs[i].size + 255) & ~(UINT64)255;
    }
    double t5 = now_ms();
    CHECK_WHY(submit_and_wait());
    double t6 = now_ms();
    t_exec = t6 - t5;

    Buf b = {0};
    put_u8(&b, 0);
    put_u32(&b, n_out);
    uint8_t *mapped = NULL;
    if (readback_size) {
        D3D12_RANGE all = {0, (SIZE_T)readback_size};
        hr = ID3D12Resource_Map(readback, 0, &all, (void **)&mapped);
        if (FAILED(hr)) {
            free(b.data);
            snprintf(err, sizeof err, "Map (readback) failed: HRESULT 0x%08lx%s", hr, hr_name(hr));
            goto done;
        }
    }
    at = 0;
    for (uint32_t i = 0; i < n_out; i++) {
        put_u64(&b, outs[i].size);
        if (outs[i].size) put(&b, mapped + at, outs[i].size);
        at += (outs[i].size + 255) & ~(UINT64)255;
    }
    if (mapped) {
        D3D12_RANGE nothing = {0, 0};
        ID3D12Resource_Unmap(readback, 0, &nothing);
    }
    put_u32(&b, ip.RequiredDescriptorCount);
    put_u32(&b, ep.RequiredDescriptorCount);
    put_u64(&b, temp_size);
    put_u64(&b, ep.PersistentResourceSize);
    put_f64(&b, t_create);
    put_f64(&b, t_compile);
    put_f64(&b, t_prepare);
    put_f64(&b, t_init);
    put_f64(&b, t_exec);
    put_f64(&b, now_ms() - t_start);
    send_response(&b);
    free(b.data);

done:
    if (err[0]) send_error("%s", err);
    release(exec_table);
    release(init_table);
    release(readback);
    release(upload);
    release(persistent);
    release(temp);
    for (uint32_t i = 0; i < n_in; i++) release(ins[i].buffer);
    for (uint32_t i = 0; i < n_out; i++) release(outs[i].buffer);
    release(init);
    free(owned);
    free(in_bb);
    free(out_bb);
    free(in_bd);
    free(out_bd);
}

static void do_exec(Cur *c) {
    if (!g.dml) return send_error("no DirectML device: %s", g.error);
    double t_start = now_ms();
    uint32_t exec_flags = get_u32(c);
    char err[512] = "";
    uint32_t root;
    uint8_t *blob = read_desc(c, &root, err, sizeof err);
    if (!blob) return send_error("EXEC: %s", err);
    Tensor *ins = NULL, *outs = NULL;
    uint32_t n_in = 0, n_out = 0;
    DmlObj *op = NULL, *compiled = NULL;
    const IDMLDeviceVtbl *dev = VT(g.dml, IDMLDeviceVtbl);
    HRESULT hr;
    void *out;
    if (!read_tensors(c, &ins, &n_in, &outs, &n_out)) {
        snprintf(err, sizeof err, "malformed EXEC request (tensors)");
        goto done;
    }
    double t0 = now_ms();
    CHECK(dev->CreateOperator(g.dml, (const DML_OPERATOR_DESC *)(blob + root), &IID_IDMLOperator, &out),
          "IDMLDevice::CreateOperator");
    op = out;
    double t1 = now_ms();
    CHECK(dev->CompileOperator(g.dml, op, exec_flags, &IID_IDMLCompiledOperator, &out), "IDMLDevice::CompileOperator");
    compiled = out;
    run_compiled(compiled, ins, n_in, outs, n_out, t_start, t1 - t0, now_ms() - t1);
done:
    if (err[0]) send_error("%s", err);
    release(compiled);
    release(op);
    free(ins);
    free(outs);
    _aligned_free(blob);
}

/* 'G' GRAPH: u32 DML_EXECUTION_FLAGS, u32 k, k x an operator node's packed desc (as EXEC's),
 * u32 a, a x (u32 graph input, u32 to node, u32 to input), u32 b, b x (u32 from node, u32 from
 * output, u32 graph output), u32 c, c x (u32 from node, u32 from output, u32 to node, u32 to
 * input), then the graph's inputs and outputs as EXEC's tensors -> as EXEC. The nodes are the
 * operators of a DML_GRAPH_DESC, in order; constants come as graph inputs. */
static void do_graph(Cur *c) {
    if (!g.dml) return send_error("no DirectML device: %s", g.error);
    double t_start = now_ms();
    uint32_t exec_flags = get_u32(c), k = get_u32(c);
    char err[512] = "";
    if (c->bad || k == 0 || k > MAX_NODES) return send_error("malformed GRAPH request (%u nodes)", k);
    uint8_t **blobs = calloc(k, sizeof *blobs);
    DmlObj **ops = calloc(k, sizeof *ops);
    DML_OPERATOR_GRAPH_NODE_DESC *op_nodes = calloc(k, sizeof *op_nodes);
    DML_GRAPH_NODE_DESC *nodes = calloc(k, sizeof *nodes);
    uint32_t *roots = calloc(k, sizeof *roots);
    DML_INPUT_GRAPH_EDGE_DESC *in_edges = NULL;
    DML_OUTPUT_GRAPH_EDGE_DESC *out_edges = NULL;
    DML_INTERMEDIATE_GRAPH_EDGE_DESC *mid_edges = NULL;
    DML_GRAPH_EDGE_DESC *in_e = NULL, *out_e = NULL, *mid_e = NULL;
    Tensor *ins = NULL, *outs = NULL;
    uint32_t n_in = 0, n_out = 0, a = 0, b = 0, m = 0;
    DmlObj *compiled = NULL;
    const IDMLDeviceVtbl *dev = VT(g.dml, IDMLDeviceVtbl);
    DmlObj *dev1 = NULL;
    HRESULT hr;
    void *out;
    if (!blobs || !ops || !op_nodes || !nodes || !roots) {
        snprintf(err, sizeof err, "out of memory for %u nodes", k);
        goto done;
    }
    for (uint32_t i = 0; i < k; i++) {
        char why[400] = "";
        blobs[i] = read_desc(c, &roots[i], why, sizeof why);
        if (!blobs[i]) {
            snprintf(err, sizeof err, "GRAPH node %u: %s", i, why);
            goto done;
        }
    }
    a = get_u32(c);
    if (c->bad || a > MAX_TENSORS) goto malformed;
    in_edges = calloc(a + 1, sizeof *in_edges);
    in_e = calloc(a + 1, sizeof *in_e);
    for (uint32_t i = 0; i < a; i++) {
        uint32_t v[3]; /* read in order: an initializer list's expressions are not sequenced */
        for (int j = 0; j < 3; j++) v[j] = get_u32(c);
        in_edges[i] = (DML_INPUT_GRAPH_EDGE_DESC){v[0], v[1], v[2], NULL};
        in_e[i] = (DML_GRAPH_EDGE_DESC){DML_GRAPH_EDGE_TYPE_INPUT, &in_edges[i]};
    }
    b = get_u32(c);
    if (c->bad || b > MAX_TENSORS) goto malformed;
    out_edges = calloc(b + 1, sizeof *out_edges);
    out_e = calloc(b + 1, sizeof *out_e);
    for (uint32_t i = 0; i < b; i++) {
        uint32_t v[3];
        for (int j = 0; j < 3; j++) v[j] = get_u32(c);
        out_edges[i] = (DML_OUTPUT_GRAPH_EDGE_DESC){v[0], v[1], v[2], NULL};
        out_e[i] = (DML_GRAPH_EDGE_DESC){DML_GRAPH_EDGE_TYPE_OUTPUT, &out_edges[i]};
    }
    m = get_u32(c);
    if (c->bad || m > MAX_TENSORS * 4) goto malformed;
    mid_edges = calloc(m + 1, sizeof *mid_edges);
    mid_e = calloc(m + 1, sizeof *mid_e);
    for (uint32_t i = 0; i < m; i++) {
        uint32_t v[4];
        for (int j = 0; j < 4; j++) v[j] = get_u32(c);
        mid_edges[i] = (DML_INTERMEDIATE_GRAPH_EDGE_DESC){v[0], v[1], v[2], v[3], NULL};
        mid_e[i] = (DML_GRAPH_EDGE_DESC){DML_GRAPH_EDGE_TYPE_INTERMEDIATE, &mid_edges[i]};
    }
    if (c->bad || !read_tensors(c, &ins, &n_in, &outs, &n_out)) goto malformed;

    double t0 = now_ms();
    for (uint32_t i = 0; i < k; i++) {
        char what[64];
        snprintf(what, sizeof what, "IDMLDevice::CreateOperator (node %u)", i);
        CHECK(dev->CreateOperator(g.dml, (const DML_OPERATOR_DESC *)(blobs[i] + roots[i]), &IID_IDMLOperator, &out), what);
        ops[i] = out;
        op_nodes[i] = (DML_OPERATOR_GRAPH_NODE_DESC){ops[i], NULL};
        nodes[i] = (DML_GRAPH_NODE_DESC){DML_GRAPH_NODE_TYPE_OPERATOR, &op_nodes[i]};
    }
    double t1 = now_ms();
    CHECK(((const IUnknownVtbl *)g.dml->vtbl)->QueryInterface((IUnknown *)g.dml, &IID_IDMLDevice1, &out),
          "QueryInterface (IDMLDevice1)");
    dev1 = out;
    DML_GRAPH_DESC graph = {n_in, n_out, k, nodes, a, in_e, b, out_e, m, mid_e};
    CHECK(VT(dev1, IDMLDevice1Vtbl)->CompileGraph(dev1, &graph, exec_flags, &IID_IDMLCompiledOperator, &out),
          "IDMLDevice1::CompileGraph");
    compiled = out;
    run_compiled(compiled, ins, n_in, outs, n_out, t_start, t1 - t0, now_ms() - t1);
    goto done;
malformed:
    snprintf(err, sizeof err, "malformed GRAPH request (edges or tensors)");
done:
    if (err[0]) send_error("%s", err);
    release(compiled);
    release(dev1);
    for (uint32_t i = 0; ops && i < k; i++) release(ops[i]);
    for (uint32_t i = 0; blobs && i < k; i++) _aligned_free(blobs[i]);
    free(blobs);
    free(ops);
    free(op_nodes);
    free(nodes);
    free(roots);
    free(in_edges);
    free(out_edges);
    free(mid_edges);
    free(in_e);
    free(out_e);
    free(mid_e);
    free(ins);
    free(outs);
}

static int handle(uint8_t opcode, Cur *c) {
    switch (opcode) {
    case 'V': do_info(); return 1;
    case 'X': do_exec(c); return 1;
    case 'G': do_graph(c); return 1;
    default: return 0;
    }
}

/* After each request: a lost or hung device ends the process (after its answer). */
static void after_request(void) {
    if (!g.broken) return;
    fprintf(stderr, "dml_exec: exiting: %s\n", g.error);
    fflush(stderr);
    _exit(3); /* the client starts a fresh process for the next request */
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hide-int64")) hide_int64 = 1;
        else if (!strcmp(argv[i], "--compute")) g.compute = 1;
    }
    proto_init();
    init_device();
    fprintf(stderr, "dml_exec: ready (%s)\n", g.dml ? g.adapter : g.error);
    fflush(stderr);
    serve(handle, after_request);
    return 0;
}
