package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kudurru/kudurru/cluster"
)

var clusterCommands = []command{
	{name: "status", summary: "Show this node's view of the cluster: leader, indexes, readiness and members.", maxArgs: 0, run: clusterStatus},
	{name: "members", summary: "List the cluster's members.", maxArgs: 0, run: clusterMembers},
	{name: "remove", args: "NODE", summary: "Remove a member from the cluster.", minArgs: 1, maxArgs: 1, run: clusterRemove},
}

func clusterStatus(ctx context.Context, c *cli, _ []string) error {
	st, err := c.api.Status(ctx)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(st)
	}
	leader := "none known"
	if st.LeaderID != "" {
		leader = st.LeaderID
		if st.LeaderAPI != "" {
			leader += " (" + st.LeaderAPI + ")"
		}
	}
	contact := "-"
	switch {
	case st.State == "leader":
	case st.LastContactS < 0:
		contact = "never"
	default:
		contact = fmt.Sprintf("%.1fs ago", st.LastContactS)
	}
	ready := "yes"
	if !st.Ready {
		ready = "no: " + st.ReadyReason
	}
	if err := c.table([]string{"NODE", st.NodeID}, [][]string{
		{"CLUSTER", st.ClusterID},
		{"STATE", st.State},
		{"TERM", strconv.FormatUint(st.Term, 10)},
		{"LEADER", leader},
		{"LAST CONTACT", contact},
		{"INDEX", fmt.Sprintf("commit %d, applied %d, serving %d", st.CommitIndex, st.AppliedIndex, st.ServingIndex)},
		{"READY", ready},
	}); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	return membersTable(c, st.Members)
}

func clusterMembers(ctx context.Context, c *cli, _ []string) error {
	st, err := c.api.Status(ctx)
	if err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(st.Members)
	}
	return membersTable(c, st.Members)
}

func membersTable(c *cli, members []cluster.MemberStatus) error {
	rows := make([][]string, 0, len(members))
	for _, m := range members {
		role := m.Suffrage
		if m.Leader {
			role += ", leader"
		}
		rows = append(rows, []string{m.ID, role, m.RaftAddr, m.APIAddr})
	}
	return c.table([]string{"MEMBER", "ROLE", "RAFT", "API"}, rows)
}

func clusterRemove(ctx context.Context, c *cli, args []string) error {
	if err := c.api.RemoveMember(ctx, args[0]); err != nil {
		return err
	}
	if c.output == "json" {
		return c.printJSON(map[string]string{"removed": args[0]})
	}
	_, err := fmt.Fprintf(c.stdout, "removed %s from the cluster\n", args[0])
	return err
}
