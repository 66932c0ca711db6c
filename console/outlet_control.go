package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// The outlet page's controls: pause, resume, rewind, and the redelivery
// or discarding of parked batches. Each is a link to a confirmation page
// (as deleting and forgetting a customer are: handleConfirmDestroy) whose
// form posts the action, which runs the same command as the API
// (commands.ChangeOutlet, RewindOutlet, RedeliverParked, DiscardParked)
// and goes back to the outlet page. Admins only (datatarget.MayControl):
// others are shown no controls, and get 403 at the addresses.

// outletAction is an action on an outlet the console offers.
type outletAction struct {
	verb, title, warning string
	// parked is true for the actions on one parked batch (?parked=<id>);
	// redeliver without it is every parked batch.
	parked bool
	run    func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, parkedID int64) error
}

var outletActions = map[string]outletAction{
	"pause": {verb: "Pause", title: "Pause this outlet?",
		warning: "Nothing more is sent until it is resumed; a request in flight ends first. Messages keep being numbered and queued, and resuming sends the first one not delivered.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, _ int64) error {
			no := false
			return c.app.Commands.ChangeOutlet.Handle(ctx, commands.ChangeOutlet{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID, Patch: datatarget.OutletPatch{Enabled: &no}})
		}},
	"resume": {verb: "Resume", title: "Resume this outlet?",
		warning: "Delivery starts again at the first message not delivered, and the receiver gets everything queued meanwhile.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, _ int64) error {
			yes := true
			return c.app.Commands.ChangeOutlet.Handle(ctx, commands.ChangeOutlet{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID, Patch: datatarget.OutletPatch{Enabled: &yes}})
		}},
	"rewind": {verb: "Rewind", title: "Rewind this outlet?",
		warning: "Every message numbered above the number you give is sent again, in order: the receiver gets them a second time.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, _ int64) error {
			after, err := strconv.ParseInt(strings.TrimSpace(g.Request.PostForm.Get("after")), 10, 64)
			if err != nil {
				return &domain.Error{Code: domain.Validation, Message: "invalid rewind",
					Details: []domain.FieldError{{Field: "after", Reason: "must be a message number"}}}
			}
			return c.app.Commands.RewindOutlet.Handle(ctx, commands.RewindOutlet{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID, After: after, Position: o.Progress.LastDeliveredMessageNumber})
		}},
	"redeliver": {verb: "Redeliver", title: "Redeliver every parked batch?",
		warning: "Each parked batch is sent again, oldest first, ahead of the queue; the receiver may get messages it refused before.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, _ int64) error {
			return c.app.Commands.RedeliverParked.Handle(ctx, commands.RedeliverParked{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID})
		}},
	"redeliver-batch": {verb: "Redeliver", title: "Redeliver this parked batch?", parked: true,
		warning: "The batch is sent again ahead of the queue; the receiver may get messages it refused before.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, id int64) error {
			return c.app.Commands.RedeliverParked.Handle(ctx, commands.RedeliverParked{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID, ParkedID: id})
		}},
	"discard": {verb: "Discard", title: "Discard this parked batch?", parked: true,
		warning: "Discarding cannot be undone: the batch's messages are never sent to this outlet.",
		run: func(c *Console, ctx context.Context, g *gin.Context, o datatarget.Outlet, id int64) error {
			return c.app.Commands.DiscardParked.Handle(ctx, commands.DiscardParked{Principal: principalOf(g), DatatargetID: o.DatatargetID,
				OutletID: o.ID, ParkedID: id})
		}},
}

// outletConfirmView is the confirmation page of an action on an outlet.
type outletConfirmView struct {
	D                      datatarget.Datatarget
	O                      outletRow
	Action, Verb, Title    string
	Warning, Back, Address string
	// Parked is the batch acted on, nil for the outlet's actions.
	Parked *parkedRow
	// Rewind asks for the number to send again after, at most Position.
	Rewind   bool
	Position int64
}

// parkedRow is a parked batch as the outlet page shows it.
type parkedRow struct {
	ID                       int64
	First, Last              int64
	Size, Attempts           int
	FirstFailed, Parked      string
	HTTPStatus               int
	Reason                   shownText
	Redelivery               bool
	RedeliverURL, DiscardURL string
}

// outletControlPath is the address of an action on an outlet (with
// ?parked=<id> for one parked batch).
func outletControlPath(datatargetID, outletID, action string, parkedID int64) string {
	p := outletPath(datatargetID, outletID) + "/control/" + action
	if parkedID > 0 {
		p += "?parked=" + formatInt(parkedID)
	}
	return p
}

// parkedRows reads the outlet's parked batches, oldest first, with
// their last failure masked as the API shows it.
func (c *Console) parkedRows(ctx context.Context, companyID string, o datatarget.Outlet, shown *budget) ([]parkedRow, error) {
	list, err := c.app.Queries.Datatargets.Parked(ctx, companyID, o.DatatargetID, o.ID)
	if err != nil {
		return nil, err
	}
	out := make([]parkedRow, 0, len(list))
	for _, b := range list {
		out = append(out, parkedRow{ID: b.ID, First: b.FirstMessageNumber, Last: b.LastMessageNumber, Size: b.BatchSize,
			Attempts: b.Attempts, FirstFailed: whenZero(b.FirstFailedAt), Parked: whenZero(b.ParkedAt), HTTPStatus: b.LastHTTPStatus,
			Reason: shown.text(datatarget.MaskText(b.LastFailReason), shownCellBytes), Redelivery: b.Redeliver,
			RedeliverURL: outletControlPath(o.DatatargetID, o.ID, "redeliver-batch", b.ID),
			DiscardURL:   outletControlPath(o.DatatargetID, o.ID, "discard", b.ID)})
	}
	return out, nil
}

// outletForAction reads what an action needs: the action (404 when
// unknown), the principal's right to it (403), the datatarget, the
// outlet and, for a parked batch's action, the batch (404 when it is not
// one of the outlet's).
func (c *Console) outletForAction(g *gin.Context) (outletAction, datatarget.Datatarget, datatarget.Outlet, *parkedRow, error) {
	a, ok := outletActions[g.Param("action")]
	if !ok {
		return a, datatarget.Datatarget{}, datatarget.Outlet{}, nil, domain.Errorf(domain.NotFound, "no such page")
	}
	if err := datatarget.MayControl(principalOf(g)); err != nil {
		return a, datatarget.Datatarget{}, datatarget.Outlet{}, nil, err
	}
	ctx := g.Request.Context()
	co := companyOf(g)
	d, err := c.app.Queries.Datatargets.Datatarget(ctx, co.ID, g.Param("id"))
	if err != nil {
		return a, d, datatarget.Outlet{}, nil, err
	}
	o, err := c.app.Queries.Datatargets.Outlet(ctx, co.ID, d.ID, g.Param("outlet"))
	if err != nil || !a.parked {
		return a, d, o, nil, err
	}
	id, _ := strconv.ParseInt(g.Query("parked"), 10, 64)
	rows, err := c.parkedRows(ctx, co.ID, o, newBudget())
	if err != nil {
		return a, d, o, nil, err
	}
	for i := range rows {
		if rows[i].ID == id && id > 0 {
			return a, d, o, &rows[i], nil
		}
	}
	return a, d, o, nil, domain.Errorf(domain.NotFound, "no such parked batch")
}

// handleConfirmOutletAction asks to confirm an action on an outlet,
// saying what it does to the receiver.
func (c *Console) handleConfirmOutletAction(g *gin.Context) error {
	a, d, o, parked, err := c.outletForAction(g)
	if err != nil {
		return err
	}
	states, err := c.app.Queries.Datatargets.OutletStates(g.Request.Context(), companyOf(g).ID, d.ID)
	if err != nil {
		return err
	}
	address := outletControlPath(d.ID, o.ID, g.Param("action"), 0)
	if parked != nil {
		address = outletControlPath(d.ID, o.ID, g.Param("action"), parked.ID)
	}
	v := outletConfirmView{D: d, O: outletRows(principalOf(g), []datatarget.Outlet{o}, states)[0], Action: g.Param("action"),
		Verb: a.verb, Title: a.title, Warning: a.warning, Back: outletPath(d.ID, o.ID), Address: address, Parked: parked,
		Rewind: g.Param("action") == "rewind", Position: o.Progress.LastDeliveredMessageNumber}
	c.render(g, http.StatusOK, "outlet_confirm", a.verb+" outlet", "datatargets", v)
	return nil
}

// handleOutletAction runs a confirmed action on an outlet through its
// command, as the API does, and shows the outlet again.
func (c *Console) handleOutletAction(g *gin.Context) error {
	g.Request.Body = http.MaxBytesReader(g.Writer, g.Request.Body, maxFormBytes)
	if err := g.Request.ParseForm(); err != nil {
		return domain.Errorf(domain.Invalid, "the form could not be read")
	}
	a, d, o, parked, err := c.outletForAction(g)
	if err != nil {
		return err
	}
	var id int64
	if parked != nil {
		id = parked.ID
	}
	if err := a.run(c, c.srv.CommandContext(g, source), g, o, id); err != nil {
		return err
	}
	g.Redirect(http.StatusSeeOther, outletPath(d.ID, o.ID)+"?done="+url.QueryEscape(g.Param("action")))
	return nil
}

// outletDone says, on the outlet page, which action was just taken.
var outletDone = map[string]string{
	"pause": "Paused: nothing more is sent until the outlet is resumed.", "resume": "Resumed at the first message not delivered.",
	"rewind": "Rewound: the messages after the number given are sent again.", "redeliver": "Every parked batch will be sent again.",
	"redeliver-batch": "The parked batch will be sent again.", "discard": "The parked batch was discarded.",
}

// outletControl is the outlet page's part on delivery: the state as the
// API names it, the parked batches, and for admins the addresses of the
// actions (empty for others, who are shown no control).
type outletControl struct {
	State       string
	Enabled     bool
	ParkedCount int64
	Parked      []parkedRow
	// Admin is true when the controls are shown.
	Admin                                        bool
	PauseURL, ResumeURL, RewindURL, RedeliverURL string
	// Done says which action was just taken ("" when none).
	Done string
}

// outletControl reads the outlet page's part on delivery.
func (c *Console) outletControl(g *gin.Context, o datatarget.Outlet, shown *budget) (outletControl, error) {
	v := outletControl{State: o.Progress.State, Enabled: o.Enabled, ParkedCount: o.Progress.ParkedCount,
		Admin: datatarget.MayControl(principalOf(g)) == nil, Done: outletDone[g.Query("done")]}
	var err error
	if v.Parked, err = c.parkedRows(g.Request.Context(), companyOf(g).ID, o, shown); err != nil {
		return v, err
	}
	if v.Admin {
		v.PauseURL = outletControlPath(o.DatatargetID, o.ID, "pause", 0)
		v.ResumeURL = outletControlPath(o.DatatargetID, o.ID, "resume", 0)
		v.RewindURL = outletControlPath(o.DatatargetID, o.ID, "rewind", 0)
		v.RedeliverURL = outletControlPath(o.DatatargetID, o.ID, "redeliver", 0)
	}
	return v, nil
}
