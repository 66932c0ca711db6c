// Package esdbtest is an in-process stand-in for an EventStoreDB node, for
// tests and benchmarks on machines where no EventStoreDB server can run.
//
// It serves, over gRPC and in memory, the part of EventStoreDB's client
// protocol that the eventstore/esdb adapter uses, from the protocol
// definitions the client module ships (EventStore-Client-Go/v4/protos):
// Streams.Append (expected revisions any, no stream, stream exists and
// exact; the maximum append size), Streams.Read of one stream (forwards
// and backwards, from the start, the end or a revision, with a count) and
// Streams.Delete, and ServerFeatures (the handshake of the client, which
// it answers with those methods and the version 0.1.0, the stand-in's own: it is no release).
// Everything else answers Unimplemented: reading $all, subscriptions,
// batch appends, persistent subscriptions, projections and gossip (a
// single node needs none).
//
// It is a stand-in, not EventStoreDB: it has no authentication, no
// durability, no $all, no system streams, and its behaviour was written
// from the protocol and the client, not observed on a server. The adapter's
// contract suite (eventstore/storetest) runs against it in `make test` and
// against a real server whenever CLIENTELE_ESDB_URL names one; what has
// been proven against a real server is stated in docs/architecture.md.
package esdbtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	features "github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// DefaultMaxAppendSize is EventStoreDB's default limit on the bytes of one
// append (its MaxAppendSize setting): 1 MiB.
const DefaultMaxAppendSize = 1 << 20

// Server is a running stand-in.
type Server struct {
	api.UnimplementedStreamsServer
	features.UnimplementedServerFeaturesServer

	// MaxAppendSize bounds the data and metadata of one append, as
	// EventStoreDB's MaxAppendSize does. Set it before the first append.
	MaxAppendSize int

	lis  net.Listener
	grpc *grpc.Server

	mu      sync.Mutex
	streams map[string][]*api.ReadResp_ReadEvent_RecordedEvent
	// deleted streams refuse appends and reads, as soft-deleted streams
	// of EventStoreDB do not; the adapter never reuses a deleted stream.
	deleted map[string]bool
	// position is the log position of the next event, as a byte offset
	// would be on a real node: only its order matters.
	position uint64
}

// Start listens on a free loopback port and serves until Close.
func Start() (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		MaxAppendSize: DefaultMaxAppendSize,
		lis:           lis,
		// A real node accepts messages up to its MaxAppendSize and more;
		// the append limit is checked on the data, below.
		grpc:     grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20)),
		streams:  map[string][]*api.ReadResp_ReadEvent_RecordedEvent{},
		deleted:  map[string]bool{},
		position: 1,
	}
	api.RegisterStreamsServer(s.grpc, s)
	features.RegisterServerFeaturesServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(lis) }()
	return s, nil
}

// URL is the connection string of the stand-in: a single node, no TLS.
func (s *Server) URL() string { return "esdb://" + s.lis.Addr().String() + "?tls=false" }

// StreamNames returns the names of the streams that exist (not deleted),
// in no order: tests check what an adapter left behind.
func (s *Server) StreamNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.streams))
	for name := range s.streams {
		out = append(out, name)
	}
	return out
}

// Close stops the server and drops every stream.
func (s *Server) Close() { s.grpc.Stop() }

// GetSupportedMethods answers the client's handshake: the methods the
// stand-in serves, as a server names them.
func (s *Server) GetSupportedMethods(context.Context, *shared.Empty) (*features.SupportedMethods, error) {
	const streams = "event_store.client.streams.streams"
	return &features.SupportedMethods{
		EventStoreServerVersion: "0.1.0",
		Methods: []*features.SupportedMethod{
			{ServiceName: streams, MethodName: "read"},
			{ServiceName: streams, MethodName: "append"},
			{ServiceName: streams, MethodName: "delete"},
			{ServiceName: "event_store.client.server_features.serverfeatures", MethodName: "getsupportedmethods"},
		},
	}, nil
}

// Append appends the proposed messages to one stream, all or none, if the
// stream is at the expected revision.
func (s *Server) Append(stream api.Streams_AppendServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil || opts.GetStreamIdentifier() == nil {
		return status.Error(codes.InvalidArgument, "the first message of an append must be its options")
	}
	name := string(opts.GetStreamIdentifier().GetStreamName())
	var proposed []*api.AppendReq_ProposedMessage
	size := 0
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		m := req.GetProposedMessage()
		if m == nil {
			return status.Error(codes.InvalidArgument, "an append carries options once, then proposed messages")
		}
		size += len(m.GetData()) + len(m.GetCustomMetadata())
		proposed = append(proposed, m)
	}
	if size > s.MaxAppendSize {
		// As EventStoreDB: an exception trailer and InvalidArgument.
		stream.SetTrailer(metadata.Pairs("exception", "maximum-append-size-exceeded", "maximum-append-size", strconv.Itoa(s.MaxAppendSize)))
		return status.Errorf(codes.InvalidArgument, "maximum append size of %d exceeded", s.MaxAppendSize)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[name] {
		stream.SetTrailer(metadata.Pairs("exception", "stream-deleted", "stream-name", name))
		return status.Errorf(codes.FailedPrecondition, "stream %q is deleted", name)
	}
	events := s.streams[name]
	current := int64(len(events)) - 1 // -1: no stream
	if !revisionMatches(opts, current) {
		return stream.SendAndClose(&api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: wrongExpectedVersion(opts, current)}})
	}
	if len(proposed) == 0 {
		return stream.SendAndClose(success(current, s.position))
	}
	created := strconv.FormatInt(time.Now().UnixNano()/100, 10) // .NET ticks since the Unix epoch
	var pos uint64
	for _, m := range proposed {
		pos = s.position
		s.position++
		meta := map[string]string{"created": created}
		for k, v := range m.GetMetadata() {
			meta[k] = v
		}
		events = append(events, &api.ReadResp_ReadEvent_RecordedEvent{
			Id:               m.GetId(),
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
			StreamRevision:   uint64(len(events)),
			PreparePosition:  pos,
			CommitPosition:   pos,
			Metadata:         meta,
			CustomMetadata:   m.GetCustomMetadata(),
			Data:             m.GetData(),
		})
	}
	s.streams[name] = events
	return stream.SendAndClose(success(int64(len(events))-1, pos))
}

func revisionMatches(opts *api.AppendReq_Options, current int64) bool {
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Any:
		return true
	case *api.AppendReq_Options_NoStream:
		return current < 0
	case *api.AppendReq_Options_StreamExists:
		return current >= 0
	case *api.AppendReq_Options_Revision:
		return current >= 0 && uint64(current) == e.Revision
	}
	return false
}

func wrongExpectedVersion(opts *api.AppendReq_Options, current int64) *api.AppendResp_WrongExpectedVersion {
	w := &api.AppendResp_WrongExpectedVersion{}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
	}
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_NoStream:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	case *api.AppendReq_Options_StreamExists:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
	case *api.AppendReq_Options_Revision:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: e.Revision}
	}
	return w
}

func success(revision int64, pos uint64) *api.AppendResp {
	ok := &api.AppendResp_Success{
		PositionOption: &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{CommitPosition: pos, PreparePosition: pos}},
	}
	if revision < 0 {
		ok.CurrentRevisionOption = &api.AppendResp_Success_NoStream{NoStream: &shared.Empty{}}
	} else {
		ok.CurrentRevisionOption = &api.AppendResp_Success_CurrentRevision{CurrentRevision: uint64(revision)}
	}
	return &api.AppendResp{Result: &api.AppendResp_Success_{Success: ok}}
}

// Read sends the events of one stream, up to the request's count.
func (s *Server) Read(req *api.ReadReq, stream api.Streams_ReadServer) error {
	opts := req.GetOptions()
	so := opts.GetStream()
	if so == nil {
		return status.Error(codes.Unimplemented, "the stand-in reads single streams only, not $all")
	}
	if _, ok := opts.GetCountOption().(*api.ReadReq_Options_Count); !ok {
		return status.Error(codes.Unimplemented, "the stand-in has no subscriptions")
	}
	if _, ok := opts.GetFilterOption().(*api.ReadReq_Options_Filter); ok {
		return status.Error(codes.Unimplemented, "the stand-in has no filters")
	}
	name := string(so.GetStreamIdentifier().GetStreamName())
	backwards := opts.GetReadDirection() == api.ReadReq_Options_Backwards

	// Copy the selected events under the lock; send them after.
	s.mu.Lock()
	events, found := s.streams[name]
	if s.deleted[name] {
		s.mu.Unlock()
		stream.SetTrailer(metadata.Pairs("exception", "stream-deleted", "stream-name", name))
		return status.Errorf(codes.FailedPrecondition, "stream %q is deleted", name)
	}
	var from int64
	switch r := so.GetRevisionOption().(type) {
	case *api.ReadReq_Options_StreamOptions_Start:
		from = 0
	case *api.ReadReq_Options_StreamOptions_End:
		from = int64(len(events)) - 1
		if !backwards {
			from = int64(len(events))
		}
	case *api.ReadReq_Options_StreamOptions_Revision:
		from = int64(min(r.Revision, uint64(len(events))))
		if backwards && r.Revision >= uint64(len(events)) {
			from = int64(len(events)) - 1
		}
	default:
		s.mu.Unlock()
		return status.Error(codes.InvalidArgument, "no revision option")
	}
	count := opts.GetCount()
	var out []*api.ReadResp_ReadEvent_RecordedEvent
	for i := from; i >= 0 && i < int64(len(events)) && uint64(len(out)) < count; {
		out = append(out, events[i])
		if backwards {
			i--
		} else {
			i++
		}
	}
	s.mu.Unlock()

	if !found {
		return stream.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
		}}})
	}
	for _, e := range out {
		if err := stream.Send(&api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
			Event:    e,
			Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: e.CommitPosition},
		}}}); err != nil {
			return err
		}
	}
	return nil
}

// Delete soft-deletes a stream. Unlike EventStoreDB, the stand-in does not
// let a deleted stream be written again (the adapter never does).
func (s *Server) Delete(_ context.Context, req *api.DeleteReq) (*api.DeleteResp, error) {
	name := string(req.GetOptions().GetStreamIdentifier().GetStreamName())
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.streams[name]; !ok {
		return nil, status.Error(codes.NotFound, fmt.Sprintf("stream %q not found", name))
	}
	delete(s.streams, name)
	s.deleted[name] = true
	return &api.DeleteResp{PositionOption: &api.DeleteResp_Position_{Position: &api.DeleteResp_Position{CommitPosition: s.position, PreparePosition: s.position}}}, nil
}
